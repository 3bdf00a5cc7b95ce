"""Code generated from ``agentsessions.v1``'s own tables (never edited by hand): the schema's
fast checkers (:mod:`.schemafast`, written by :mod:`agentsessions.v1.schemagen`)."""
