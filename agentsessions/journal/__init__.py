"""Storage only: canonical hash, segments, the hash chain, and the store contract.

Imports nothing above it (no controller, CLI, server, harness or runtime).
"""
