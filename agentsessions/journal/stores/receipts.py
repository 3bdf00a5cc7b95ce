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
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from agentsessions.errors import StorageError
from agentsessions.journal.format.durable import FileSystem

RECEIPTS_NAME = "TOOLRECEIPTS"
WORKLOAD_NAME = "WORKLOAD"
"""The session's workload (``--tools FILE``, its TOML text), replaced by a later one."""


def kept_workload_name(digest: str) -> str:
    """The file keeping the workload of SHA-256 ``digest`` (64 hex digits), which the
    executions that ran with it name in their EXECUTION_START: ``WORKLOAD.<digest>``."""
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError(f"not a workload digest: {digest!r}")
    return f"{WORKLOAD_NAME}.{digest}"


def read_receipt(path: str | os.PathLike[str], key: str) -> dict[str, Any] | None:
    """The latest receipt kept for ``key`` in the file at ``path``, or None."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot read tool receipts {path}: {exc.strerror}") from exc
    found: dict[str, Any] | None = None
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a torn line: that outcome was never acknowledged
        if isinstance(entry, dict) and entry.get("key") == key:
            receipt = entry.get("receipt")
            found = receipt if isinstance(receipt, dict) else None
    return found


def append_receipt(
    fs: FileSystem, path: str | os.PathLike[str], key: str, receipt: Mapping[str, Any]
) -> None:
    """Keep ``receipt`` for ``key`` durably (one fsync; the directory too on creation)."""
    line = json.dumps({"key": key, "receipt": dict(receipt)}, sort_keys=True, ensure_ascii=False)
    fs.append_durable(path, b"\n" + line.encode("utf-8") + b"\n")
