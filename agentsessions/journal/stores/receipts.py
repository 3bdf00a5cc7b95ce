"""The host's tool receipts for one session: ``TOOLRECEIPTS``, beside the journal.

A receipt is the outcome of one mediated tool call, kept under its idempotency key so a call
cut by a crash after its executor ran is answered from here and never run again (see
``agentsessions/controller/toolcalls.py``). The file is JSON lines, appended and fsync'd
(:meth:`FileSystem.append_durable`) before the call's TOOL_RESULT is committed; the latest
line of a key wins. Each line is written as ``"\\n" + json + "\\n"``: a line torn by a crash
(never acknowledged, so its outcome is unknown, which is what a reader then concludes) is
ended by the next write's leading newline and skipped as unparseable. The file is not part
of the hash chain: it is the executor's dedup state, kept by the host for executors that
have none. Besides outcomes it holds two marks (a receipt without ``result``): ``started``
(an approved call's executor is about to run) and ``unknown`` (a resume found the call's
outcome unknown: it is unresolved for a person, whose ``resolve`` appends the outcome).

In an encrypted session (docs/FORMAT.md 15) a line is ``{"id": ..., "sealed": ...}``: the
id is a MAC of the key under the data key (``SessionCipher.receipt_id``), so the file does
not show the key, and ``sealed`` is the line's ``{"key", "receipt"}`` sealed as a blob bound
to that id: a line moved under another id fails its tag, and one whose key does not MAC to
its id is refused, so a key holder (``verify``) checks every line without knowing the keys.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentsessions.errors import JournalCorruptError, StorageError
from agentsessions.journal.format.durable import FileSystem

if TYPE_CHECKING:
    from agentsessions.journal.crypto.cipher import SessionCipher

RECEIPTS_NAME = "TOOLRECEIPTS"
WORKLOAD_NAME = "WORKLOAD"
"""The session's workload (``--tools FILE``, its TOML text), replaced by a later one."""


def kept_workload_name(digest: str) -> str:
    """The file keeping the workload of SHA-256 ``digest`` (64 hex digits), which the
    executions that ran with it name in their EXECUTION_START: ``WORKLOAD.<digest>``."""
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError(f"not a workload digest: {digest!r}")
    return f"{WORKLOAD_NAME}.{digest}"


def read_receipt(
    path: str | os.PathLike[str], key: str, cipher: SessionCipher | None = None
) -> dict[str, Any] | None:
    """The latest receipt kept for ``key`` in the file at ``path``, or None; ``cipher``:
    an encrypted session's, which opens sealed lines (a failed tag is exit 8)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot read tool receipts {path}: {exc.strerror}") from exc
    found: Any = None
    want = cipher.receipt_id(key) if cipher is not None else key
    field = "id" if cipher is not None else "key"
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a torn line: that outcome was never acknowledged
        if isinstance(entry, dict) and entry.get(field) == want:
            found = entry.get("sealed") if cipher is not None else entry.get("receipt")
    if cipher is not None and found is not None:
        found = open_sealed(cipher, key, found, path)
    return found if isinstance(found, dict) else None


def open_sealed(cipher: SessionCipher, key: str, sealed: Any, path: str | os.PathLike[str]) -> Any:
    """The receipt a sealed line (its ``sealed`` field) holds for ``key``: its tag checked
    against ``key``'s id, the key inside checked to be ``key`` (JournalCorruptError, exit
    8, if not); ``path`` names where it was read in an error."""
    entry = open_line(cipher, {"id": cipher.receipt_id(key), "sealed": sealed}, path)
    if entry.get("key") != key:
        raise JournalCorruptError(
            f"{path}: the sealed receipt filed under {key!r} is another key's",
            path=os.fspath(path),
        )
    return entry.get("receipt")


def open_line(
    cipher: SessionCipher, line: Mapping[str, Any], path: str | os.PathLike[str]
) -> dict[str, Any]:
    """The ``{"key", "receipt"}`` a sealed line holds: its blob is bound to the line's id,
    and the key inside must MAC to that id (JournalCorruptError, exit 8, if not)."""
    from agentsessions.journal.crypto.cipher import RECEIPT_KIND

    rid = str(line.get("id", ""))
    try:
        blob = base64.b64decode(str(line.get("sealed", "")), validate=True)
    except (binascii.Error, ValueError):
        raise JournalCorruptError(
            f"{path}: a sealed receipt is not base64", path=os.fspath(path)
        ) from None
    try:
        entry = json.loads(cipher.open_blob(RECEIPT_KIND, blob, rid.encode()))
    except ValueError:
        entry = None
    if not isinstance(entry, dict) or cipher.receipt_id(str(entry.get("key"))) != rid:
        raise JournalCorruptError(
            f"{path}: a sealed receipt is not filed under its key's id", path=os.fspath(path)
        )
    return entry


def sealed_lines(data: bytes) -> list[dict[str, Any]]:
    """The whole sealed lines of an encrypted session's receipts file (torn ones skipped)."""
    found = []
    for line in data.splitlines():
        try:
            entry = json.loads(line) if line.strip() else None
        except ValueError:
            continue
        if isinstance(entry, dict) and "sealed" in entry:
            found.append(entry)
    return found


def seal_line(cipher: SessionCipher, key: str, receipt: Mapping[str, Any]) -> dict[str, str]:
    """The sealed form of the receipt of ``key``: ``{"id", "sealed"}``, the id a MAC of the
    key under the data key, the blob the ``{"key", "receipt"}`` line bound to that id (the
    file store's line; the JetStream store's message too). :func:`open_line` inverts it."""
    from agentsessions.journal.crypto.cipher import RECEIPT_KIND

    rid = cipher.receipt_id(key)
    entry = {"key": key, "receipt": dict(receipt)}
    plain = json.dumps(entry, sort_keys=True, ensure_ascii=False).encode("utf-8")
    blob = cipher.seal_blob(RECEIPT_KIND, plain, rid.encode())
    return {"id": rid, "sealed": base64.b64encode(blob).decode()}


def append_receipt(
    fs: FileSystem,
    path: str | os.PathLike[str],
    key: str,
    receipt: Mapping[str, Any],
    cipher: SessionCipher | None = None,
) -> None:
    """Keep ``receipt`` for ``key`` durably (one fsync; the directory too on creation);
    sealed by ``cipher`` (an encrypted session's)."""
    entry: dict[str, Any] = {"key": key, "receipt": dict(receipt)}
    if cipher is not None:
        entry = seal_line(cipher, key, receipt)
    line = json.dumps(entry, sort_keys=True, ensure_ascii=False)
    fs.append_durable(path, b"\n" + line.encode("utf-8") + b"\n")
