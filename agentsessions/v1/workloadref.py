"""Which workload (and model) an execution ran with: carried in its ``ExecutionStart.config``.

(Vocabulary: stdlib only, so the controller, the compaction rules and a harness may import it.)

A session's tools come from its workload (``--tools FILE``), and a later ``--tools`` replaces
it for new turns. So that replay, resume and approval re-drive an execution with exactly the
tools it was offered, the controller records the workload's digest (SHA-256 of its TOML text)
in the execution's first commit, within the reference's event schema: the recorded
``ExecutionStart.config`` is the envelope ``PREFIX + 64 hex digits + "\\n"`` followed by the
harness's own config bytes. The workload text itself is kept by that digest beside the
journal (the store's ``WORKLOAD.<digest>`` files), never in the chain.

A turn run on another model than the session's (``exec --model SPEC``) records that model
the same way, so that resume re-drives it on the model it began with (the reference's
``ExecutionStart`` has no model field): after the workload line, if any, the line
``MODEL_PREFIX + spec + "\n"``. A turn on the session's own model records no model line.

Invariants: an execution of a session without a workload, on the session's model, records
its config unchanged (such a journal is byte-identical to one written before this envelope
existed), and so does every execution recorded before it; :func:`split` of such a config
returns it whole with digest ``""`` ("the session's current workload", the old rule) and
:func:`parse` with model ``""`` ("the session's model"). A harness never sees the envelope:
``Start.config`` is the config the caller gave. A caller's config may not begin with
:data:`RESERVED` (the controller refuses it), so the envelope is unambiguous.
"""

from __future__ import annotations

import hashlib
import re

PREFIX = b"\x00agentsessions.workload sha256:"
"""The envelope's opening: a NUL first, which no JSON or TOML config begins with."""
MODEL_PREFIX = b"\x00agentsessions.model "
"""The opening of the line naming the turn's model spec (UTF-8, no control characters)."""
RESERVED = b"\x00agentsessions."
"""What a caller's config may not begin with: every envelope line does."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_HEX = re.compile(rb"[0-9a-f]{64}")
_HEAD = len(PREFIX) + 64 + 1


def digest_of(text: str) -> str:
    """The digest a workload is recorded and kept by: SHA-256 hex of its UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def wrap(config: bytes, digest: str, model: str = "") -> bytes:
    """The config an EXECUTION_START records: ``config`` itself when ``digest`` and
    ``model`` are empty, else the envelope naming the workload and/or model, then ``config``."""
    head = b""
    if digest:
        if not _HEX.fullmatch(digest.encode("ascii", "replace")):
            raise ValueError(f"a workload digest is 64 lowercase hex digits, got {digest!r}")
        head = PREFIX + digest.encode("ascii") + b"\n"
    if model:
        if _CONTROL.search(model):
            raise ValueError(f"a model spec has no control characters, got {model!r}")
        head += MODEL_PREFIX + model.encode("utf-8") + b"\n"
    return head + bytes(config)


def parse(recorded: bytes) -> tuple[bytes, str, str]:
    """``(harness config, workload digest, model spec)`` of a recorded config; the digest
    and the model are ``""`` where the envelope names none."""
    config, digest = _split_digest(recorded)
    model = ""
    if config.startswith(MODEL_PREFIX):
        line, newline, rest = config[len(MODEL_PREFIX) :].partition(b"\n")
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            text = ""
        if newline and text and not _CONTROL.search(text):
            config, model = rest, text
    return config, digest, model


def split(recorded: bytes) -> tuple[bytes, str]:
    """``(harness config, workload digest)`` of a recorded config; the digest is ``""`` for a
    config without the envelope (returned whole, less any model line)."""
    config, digest, _model = parse(recorded)
    return config, digest


def _split_digest(recorded: bytes) -> tuple[bytes, str]:
    if not recorded.startswith(PREFIX) or len(recorded) < _HEAD:
        return recorded, ""
    digest = recorded[len(PREFIX) : _HEAD - 1]
    if recorded[_HEAD - 1 : _HEAD] != b"\n" or not _HEX.fullmatch(digest):
        return recorded, ""
    return recorded[_HEAD:], digest.decode("ascii")


def reserved(config: bytes) -> bool:
    """Whether a caller's ``config`` begins with :data:`RESERVED` (refused)."""
    return bytes(config).startswith(RESERVED)
