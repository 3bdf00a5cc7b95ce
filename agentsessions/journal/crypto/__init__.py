"""Encryption at rest: per-session data keys wrapped by a master key (:mod:`.keys`) and
sealed records (:mod:`.sealed`), a layer independent of any store's file format."""
