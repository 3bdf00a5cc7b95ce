"""The JetStream store's optional capabilities: what the file store keeps in small files
beside a journal (``CANCEL``, ``TOOLRECEIPTS``, ``WORKLOAD``, ``WORKLOAD.<digest>``) and in
its home (``HARNESSES.json``), kept as messages in the store's stream so every host sees them.

Subjects (``P`` is the store's prefix; ``docs/JETSTREAM.md`` has the layout):

    P.x.<uid>                  the pending cancel request: the last message is current
    P.r.<uid>.<sha256(key)>    the tool receipt of one idempotency key: the last one wins
    P.w.<uid>                  the session's workload now: the last message is current
    P.wk.<uid>.<digest>        a workload kept by its SHA-256, written once (CAS at 0)
    P.h                        the harness registrations, all of them: the last one wins

Every write is one publish the server fsyncs before its ack (the store refuses a server
that does not), with CAS at the subject's last sequence, so two hosts never interleave a
read-modify-write. A body is one JSON line (the header format of ``jetstream/wire.py``).

The cancel check runs before every effect of a live turn, so it must cost what the file
store's one ``stat`` costs: :class:`Latest` keeps the last message of each ``P.x`` subject in
memory, and one core subscription on ``P.x.*`` marks a subject stale when anything is
published on it (a request from any host): only then, after a reconnect, or after
:data:`RECHECK_SECONDS` (a backstop for a wake-up lost to a slow consumer), is the stream
read again. The workload, asked several times per turn, is kept the same way.

An encrypted session's receipts and workloads are sealed as the file store seals its
``TOOLRECEIPTS`` and ``WORKLOAD`` files (docs/FORMAT.md 15), with the same kinds and
bindings, so the server never holds their plaintext: a receipt's subject token is the MAC of
its idempotency key under the data key (``SessionCipher.receipt_id``; never the key, nor a
plain hash of it a guess could confirm) and its body ``{"id", "sealed"}``, the blob of
``{"key", "receipt"}`` bound to that id; a workload's body is ``{"sealed"}``, bound to
``current`` (``P.w``) or its digest (``P.wk``). Reading one needs the master key (exit 26
without), a failed tag is exit 8, and a sealed body in a plaintext session (or a clear one
in an encrypted session) is refused, never read. A plaintext session's bodies are as before.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from agentsessions.errors import JournalCorruptError, MasterKeyError, UnavailableError
from agentsessions.journal.stores import receipts as filereceipts
from agentsessions.journal.stores.jetstream import client as jsclient
from agentsessions.journal.stores.jetstream import wire
from agentsessions.journal.stores.jetstream.client import Client
from agentsessions.v1 import workloadref

if TYPE_CHECKING:
    from agentsessions.journal.crypto.cipher import SessionCipher

RECHECK_SECONDS = 2.0  # the longest a kept value is trusted without a wake-up
_CAS_TRIES = 8  # read-modify-write rounds before a busy subject is reported
_CURRENT = b"current"  # the binding of the session's current workload (the file store's)


def cancel_subject(prefix: str, uid: str) -> str:
    """The subject of ``uid``'s pending cancel request."""
    return f"{prefix}.x.{uid}"


def receipt_subject(prefix: str, uid: str, key: str, cipher: SessionCipher | None = None) -> str:
    """The subject of one tool receipt: the key hashed, since any text may be a key and a
    subject token may not hold ``.``, ``*``, ``>`` or spaces; in an encrypted session
    (``cipher``) its MAC under the data key instead, so the subject does not confirm a
    guessed key."""
    token = hashlib.sha256(key.encode()).hexdigest() if cipher is None else cipher.receipt_id(key)
    return f"{prefix}.r.{uid}.{token}"


def workload_subject(prefix: str, uid: str) -> str:
    """The subject of ``uid``'s current workload."""
    return f"{prefix}.w.{uid}"


def kept_workload_subject(prefix: str, uid: str, digest: str) -> str:
    """The subject keeping the workload of ``digest`` (ValueError for a malformed one)."""
    filereceipts.kept_workload_name(digest)  # the same check as the file store's name
    return f"{prefix}.wk.{uid}.{digest}"


def harness_subject(prefix: str) -> str:
    """The subject of the harness registrations (one document for the whole store)."""
    return f"{prefix}.h"


def _sealed_in_plaintext(uid: str, subject: str) -> MasterKeyError:
    """A sealed body met in a session not marked encrypted: refused, never read."""
    return MasterKeyError(
        f"{subject} is sealed but session {uid} is not marked encrypted",
        hint="it was not written by this session's store",
        session=uid,
    )


def _body(head: Mapping[str, Any]) -> bytes:
    return json.dumps(dict(head), separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def _token() -> str:
    return secrets.token_hex(12)


class Latest:
    """The last message of each subject under ``pattern``, kept in memory while a core
    subscription says nothing was published on it (see the module docstring)."""

    def __init__(self, client: Client, pattern: str) -> None:
        self._client, self._pattern = client, pattern
        self._lock = threading.Lock()
        self._kept: dict[str, tuple[float, int, wire.Message | None]] = {}
        self._stale: set[str] = set()  # subjects a wake-up named since their last read
        self._sub: Any = None
        self._subscribing = threading.Lock()
        self.reads = 0  # stream reads made (tests and the bench count them)

    def get(self, subject: str) -> wire.Message | None:
        """The subject's last message: from memory when nothing says it changed."""
        now = time.monotonic()
        with self._lock:
            kept = self._kept.get(subject)
            if (
                kept is not None
                and subject not in self._stale
                and now - kept[0] < RECHECK_SECONDS
                and kept[1] == jsclient.reconnects(self._client)
            ):
                return kept[2]
            self._stale.discard(subject)  # a wake-up from here on marks it again
        with self._subscribing:  # one subscription per pattern, however many threads ask
            if self._sub is None:
                self._sub = jsclient.watch(self._client, self._pattern, self._woke)
        seen = jsclient.reconnects(self._client)
        try:
            msg = self._client.last(subject)
        except UnavailableError:
            if kept is None:
                raise
            return kept[2]  # the server is away: a commit will say so; this is only a check
        with self._lock:
            self.reads += 1
            self._kept[subject] = (now, seen, msg)
        return msg

    def forget(self, subject: str) -> None:
        """Read ``subject`` again next time (this process just wrote it)."""
        with self._lock:
            self._kept.pop(subject, None)

    def _woke(self, subject: str) -> None:
        with self._lock:
            self._stale.add(subject)


class Extras:
    """Cancel requests, tool receipts, workloads and harness registrations of one store: a
    base of :class:`~.store.JetStreamStore` (as ``HostFiles`` is of the file store), so the
    store itself is what the capability lookup returns and nothing forwards to it."""

    def __init__(
        self,
        client: Client,
        prefix: str,
        check_session: Callable[[str], object],
        cipher_of: Callable[[str], SessionCipher | None] = lambda _uid: None,
    ) -> None:
        self._client, self._prefix = client, prefix
        self._check_session = check_session  # NotFoundError for an unknown session
        self._cipher_of = cipher_of  # None: a plaintext session; exit 26 errors without key
        self.cancels = Latest(client, f"{prefix}.x.*")
        self.workloads = Latest(client, f"{prefix}.w.*")
        self._opened: dict[str, tuple[int, str]] = {}  # subject -> (stream seq, opened text)

    # -- cancel requests ----------------------------------------------------------------
    def request_cancel(self, uid: str, execution_id: str, reason: str = "") -> None:
        """Durably ask the running turn of ``execution_id`` (on any host) to stop."""
        self._check_session(uid)
        subject = cancel_subject(self._prefix, uid)
        head = {"k": "x", "execution_id": execution_id, **({"reason": reason} if reason else {})}
        self._replace(subject, lambda _last: head)
        self.cancels.forget(subject)

    def cancel_requested(self, uid: str) -> str | None:
        """The execution id the pending request names, or None (from memory, see above)."""
        msg = self.cancels.get(cancel_subject(self._prefix, uid))
        named = msg.head.get("execution_id") if msg is not None else None
        return named if isinstance(named, str) and named else None

    def cancel_reason(self, uid: str) -> str:
        """The reason the pending request gives ("" when none or not said)."""
        msg = self.cancels.get(cancel_subject(self._prefix, uid))
        if msg is None or not msg.head.get("execution_id"):
            return ""
        reason = msg.head.get("reason")
        return reason if isinstance(reason, str) else ""

    def clear_cancel(self, uid: str) -> None:
        """Mark the request answered (idempotent, durable). CAS at the request read: a newer
        request that came meanwhile stays."""
        subject = cancel_subject(self._prefix, uid)
        last = self._client.last(subject)
        if last is None or not last.head.get("execution_id"):
            return
        self._client.publish(subject, _body({"k": "x"}), expect=last.stream_seq, token=_token())
        self.cancels.forget(subject)

    # -- tool receipts --------------------------------------------------------------------
    def tool_receipt(self, uid: str, key: str) -> dict[str, Any] | None:
        """The receipt kept for ``(uid, key)``, or None (opened in an encrypted session)."""
        cipher = self._cipher_of(uid)
        subject = receipt_subject(self._prefix, uid, key, cipher)
        msg = self._client.last(subject)
        if msg is None:
            return None
        if cipher is not None:
            receipt = filereceipts.open_sealed(cipher, key, msg.head.get("sealed"), subject)
            return dict(receipt) if isinstance(receipt, dict) else None
        if "sealed" in msg.head:
            raise _sealed_in_plaintext(uid, subject)
        if msg.head.get("key") != key:
            return None
        receipt = msg.head.get("receipt")
        return dict(receipt) if isinstance(receipt, dict) else None

    def record_tool_receipt(self, uid: str, key: str, receipt: Mapping[str, Any]) -> None:
        """Keep ``receipt`` for ``(uid, key)``, acknowledged once the server fsync'd it."""
        self._check_session(uid)
        cipher = self._cipher_of(uid)
        head: dict[str, Any] = {"k": "r", "key": key, "receipt": dict(receipt)}
        if cipher is not None:
            head = {"k": "r", **filereceipts.seal_line(cipher, key, receipt)}
        self._replace(receipt_subject(self._prefix, uid, key, cipher), lambda _last: head)

    # -- workloads ------------------------------------------------------------------------
    def workload(self, uid: str) -> str | None:
        """The workload TOML recorded for ``uid``, or None (kept in memory as cancels are)."""
        subject = workload_subject(self._prefix, uid)
        msg = self.workloads.get(subject)
        return None if msg is None else self._workload_text(uid, subject, msg, _CURRENT)

    def set_workload(self, uid: str, text: str) -> None:
        """Record ``text`` as the session's workload (replaces any), kept by digest first."""
        self._check_session(uid)
        digest = self.keep_workload(uid, text)
        subject = workload_subject(self._prefix, uid)
        head = self._workload_head(uid, "w", text, _CURRENT, {"digest": digest})
        self._replace(subject, lambda _last: head)
        self.workloads.forget(subject)

    def keep_workload(self, uid: str, text: str) -> str:
        """Keep ``text`` under its digest, written once (CAS at 0: a second keep of the same
        text finds it there and writes nothing); returns the digest."""
        digest = workloadref.digest_of(text)
        subject = kept_workload_subject(self._prefix, uid, digest)
        body = _body(self._workload_head(uid, "wk", text, digest.encode(), {"digest": digest}))
        self._client.publish(subject, body, expect=0, token=_token())  # None: kept already
        return digest

    def workload_at(self, uid: str, digest: str) -> str | None:
        """The workload kept for ``uid`` under ``digest``, or None."""
        try:
            subject = kept_workload_subject(self._prefix, uid, digest)
        except ValueError:
            return None
        msg = self._client.last(subject)
        if msg is None:
            return None
        text = self._workload_text(uid, subject, msg, digest.encode())
        if text is None or workloadref.digest_of(text) != digest:
            if text is not None and "sealed" in msg.head:  # authentic, yet not its digest
                raise JournalCorruptError(
                    f"{subject}: the kept workload does not have the digest it is named by"
                )
            return None
        return text

    def _workload_head(
        self, uid: str, kind: str, text: str, binding: bytes, clear: Mapping[str, Any]
    ) -> dict[str, Any]:
        """A workload message's body: ``clear`` and the text, or only the sealed text (an
        encrypted session's, bound to ``binding``)."""
        from agentsessions.journal.crypto.cipher import WORKLOAD_KIND

        cipher = self._cipher_of(uid)
        if cipher is None:
            return {"k": kind, **clear, "text": text}
        blob = cipher.seal_blob(WORKLOAD_KIND, text.encode("utf-8"), binding)
        return {"k": kind, "sealed": base64.b64encode(blob).decode()}

    def _workload_text(
        self, uid: str, subject: str, msg: wire.Message, binding: bytes
    ) -> str | None:
        """The text of a workload message: opened if sealed (kept once opened, so a turn's
        repeated asks cost no key use), refused if its form contradicts the session's."""
        sealed = msg.head.get("sealed")
        if sealed is None:
            if self._cipher_of(uid) is not None:
                raise JournalCorruptError(
                    f"{subject}: a workload in the clear in an encrypted session (not written "
                    "by its store)",
                    session=uid,
                )
            text = msg.head.get("text")
            return text if isinstance(text, str) else None
        kept = self._opened.get(subject)
        if kept is not None and kept[0] == msg.stream_seq:
            return kept[1]
        cipher = self._cipher_of(uid)
        if cipher is None:
            raise _sealed_in_plaintext(uid, subject)
        from agentsessions.journal.crypto.cipher import WORKLOAD_KIND

        try:
            blob = base64.b64decode(str(sealed), validate=True)
        except (binascii.Error, ValueError):
            raise JournalCorruptError(f"{subject}: a sealed workload is not base64") from None
        try:
            text = cipher.open_blob(WORKLOAD_KIND, blob, binding).decode("utf-8")
        except UnicodeDecodeError:
            raise JournalCorruptError(f"{subject}: the workload is not UTF-8 text") from None
        self._opened[subject] = (msg.stream_seq, text)
        return text

    def check_sealed(self, uid: str, cipher: SessionCipher) -> int:
        """Open every receipt and workload of encrypted session ``uid`` (``verify`` with the
        key, as the file store's checks its ``TOOLRECEIPTS`` lines and ``WORKLOAD`` files):
        each tag, each receipt's key against its subject's id, each kept workload's digest
        (JournalCorruptError, exit 8). Returns how many messages it checked."""
        checked = 0
        for subject in sorted(self._client.subjects(f"{self._prefix}.r.{uid}.*")):
            msg = self._client.last(subject)
            if msg is None:
                continue
            entry = filereceipts.open_line(cipher, msg.head, subject)
            if receipt_subject(self._prefix, uid, str(entry.get("key")), cipher) != subject:
                raise JournalCorruptError(f"{subject}: a sealed receipt under another's id")
            checked += 1
        current = workload_subject(self._prefix, uid)
        msg = self._client.last(current)
        if msg is not None:
            self._opened.pop(current, None)  # opened again, not taken from memory
            self._workload_text(uid, current, msg, _CURRENT)
            checked += 1
        for subject in sorted(self._client.subjects(f"{self._prefix}.wk.{uid}.*")):
            if self.workload_at(uid, subject.rsplit(".", 1)[1]) is None:
                raise JournalCorruptError(f"{subject}: the kept workload is not readable")
            checked += 1
        return checked

    # -- harness registrations --------------------------------------------------------------
    def harness_records(self) -> HarnessRecords:
        """The registrations (``sessions/harnessbook.py``'s two methods), in the stream."""
        return HarnessRecords(self)

    # -- internals ------------------------------------------------------------------------
    def _replace(
        self, subject: str, make: Callable[[wire.Message | None], Mapping[str, Any] | None]
    ) -> None:
        """Publish ``make(last)`` on ``subject`` with CAS at its last message; again if
        another host published in between; ``make`` returning None writes nothing."""
        for _ in range(_CAS_TRIES):
            last = self._client.last(subject)
            head = make(last)
            if head is None:
                return
            expect = last.stream_seq if last is not None else 0
            if self._client.publish(subject, _body(head), expect=expect, token=_token()):
                return
        raise UnavailableError(
            f"{subject} kept changing while this host wrote it ({_CAS_TRIES} tries); "
            "nothing was written",
            hint="try again",
        )


class HarnessRecords:
    """The harness registrations as one document on ``P.h`` (read-modify-write with CAS)."""

    def __init__(self, extras: Extras) -> None:
        self._extras = extras
        self._subject = harness_subject(extras._prefix)

    def read(self) -> dict[str, Any]:
        """Every registration, by name."""
        return _harnesses(self._extras._client.last(self._subject))

    def update(self, change: Callable[[dict[str, Any]], bool]) -> None:
        """Apply ``change`` to the current registrations and keep the result if it says True,
        atomically against other hosts (CAS), durable before this returns."""

        def make(last: wire.Message | None) -> dict[str, Any] | None:
            data = _harnesses(last)
            return {"k": "h", "harnesses": data} if change(data) else None

        self._extras._replace(self._subject, make)


def _harnesses(msg: wire.Message | None) -> dict[str, Any]:
    data = msg.head.get("harnesses") if msg is not None else None
    return json.loads(json.dumps(data)) if isinstance(data, dict) else {}
