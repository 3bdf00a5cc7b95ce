"""Which workload an execution ran with: a digest carried in its ``ExecutionStart.config``.

(Vocabulary: stdlib only, so the controller, the compaction rules and a harness may import it.)

A session's tools come from its workload (``--tools FILE``), and a later ``--tools`` replaces
it for new turns. So that replay, resume and approval re-drive an execution with exactly the
tools it was offered, the controller records the workload's digest (SHA-256 of its TOML text)
in the execution's first commit, within the reference's event schema: the recorded
``ExecutionStart.config`` is the envelope ``PREFIX + 64 hex digits + "\\n"`` followed by the
harness's own config bytes. The workload text itself is kept by that digest beside the
journal (the store's ``WORKLOAD.<digest>`` files), never in the chain.

Invariants: an execution of a session without a workload records its config unchanged (such a
journal is byte-identical to one written before this envelope existed), and so does every
execution recorded before it; :func:`split` of such a config returns it whole with digest
``""`` ("the session's current workload", the old rule). A harness never sees the envelope:
``Start.config`` is the config the caller gave. A caller's config may not begin with
:data:`PREFIX` (the controller refuses it), so the envelope is unambiguous.
"""

from __future__ import annotations

import hashlib
import re

PREFIX = b"\x00agentsessions.workload sha256:"
"""The envelope's opening: a NUL first, which no JSON or TOML config begins with."""
_HEX = re.compile(rb"[0-9a-f]{64}")
_HEAD = len(PREFIX) + 64 + 1


def digest_of(text: str) -> str:
    """The digest a workload is recorded and kept by: SHA-256 hex of its UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def wrap(config: bytes, digest: str) -> bytes:
    """The config an EXECUTION_START records: ``config`` itself when ``digest`` is empty,
    else the envelope naming the workload, then ``config``."""
    if not digest:
        return bytes(config)
    if not _HEX.fullmatch(digest.encode("ascii", "replace")):
        raise ValueError(f"a workload digest is 64 lowercase hex digits, got {digest!r}")
    return PREFIX + digest.encode("ascii") + b"\n" + bytes(config)


def split(recorded: bytes) -> tuple[bytes, str]:
    """``(harness config, workload digest)`` of a recorded config; the digest is ``""`` for a
    config without the envelope (returned whole)."""
    if not recorded.startswith(PREFIX) or len(recorded) < _HEAD:
        return recorded, ""
    digest = recorded[len(PREFIX) : _HEAD - 1]
    if recorded[_HEAD - 1 : _HEAD] != b"\n" or not _HEX.fullmatch(digest):
        return recorded, ""
    return recorded[_HEAD:], digest.decode("ascii")


def reserved(config: bytes) -> bool:
    """Whether a caller's ``config`` begins with the envelope's :data:`PREFIX` (refused)."""
    return bytes(config).startswith(PREFIX)
