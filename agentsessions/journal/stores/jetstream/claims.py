"""Key claims in the JetStream store (:mod:`agentsessions.journal.stores.claims`): one subject
per key, in the store's own stream.

    P.k.<digest>    {"k": "k", "uid": UID}: the key is bound to UID; {"k": "k", "uid": ""}:
                    released. The last message is current.

Why a subject of the journal's stream and not a KV bucket: a KV bucket's create-only put
is a publish with ``Nats-Expected-Last-Subject-Sequence`` on its own stream, the very CAS
every write of this store already makes (``client.publish``, which also rides out a leader
election and resolves an unknown outcome by its message id). One stream keeps one set of
settings to check (replicas, fsync before ack, deny delete), one identity (``P.g``) and
no second thing to provision.

Invariants: a claim is a publish with CAS at the subject's last sequence as read, made
only when that message says unbound (or there is none: CAS at 0), so of any number of
hosts claiming one key at once exactly one lands; the rest read the winner's. A release is
a publish with CAS at the message that names our uid, so it never undoes a newer claim.
Every publish is acknowledged after the server's fsync (the store refuses a stream that
does not sync). A body holds a uid, and the subject a digest, never the key.
"""

from __future__ import annotations

import json
import secrets

from agentsessions.errors import InvalidArgumentError, JournalCorruptError, LockHeldError
from agentsessions.journal.stores.claims import ClaimKey
from agentsessions.journal.stores.jetstream.client import Client
from agentsessions.journal.stores.jetstream.wire import Message
from agentsessions.v1.ids import check_uid

_TRIES = 16  # CAS rounds before a subject that keeps moving is reported


def claim_subject(prefix: str, key: ClaimKey) -> str:
    """The subject of ``key``'s claim (its digest binds the project)."""
    return f"{prefix}.k.{key.digest}"


class StreamClaims:
    """The claims of one JetStream store (see the module docstring)."""

    def __init__(self, client: Client, prefix: str) -> None:
        self._client, self._prefix = client, prefix

    def claim(self, key: ClaimKey, uid: str) -> str:
        """Bind ``key`` to ``uid`` unless bound; the uid bound, acknowledged."""
        check_uid(uid)
        subject = claim_subject(self._prefix, key)
        for _ in range(_TRIES):
            last = self._client.last(subject)
            bound = _uid_of(last, subject)
            if bound:
                return bound
            expect = last.stream_seq if last is not None else 0
            if self._client.publish(subject, _body(uid), expect=expect, token=_token()):
                return uid
        raise LockHeldError(f"the claim on {subject} kept changing")

    def lookup(self, key: ClaimKey) -> str:
        """The uid ``key`` is bound to, "" if none (one direct get)."""
        subject = claim_subject(self._prefix, key)
        return _uid_of(self._client.last(subject), subject)

    def release(self, key: ClaimKey, uid: str) -> None:
        """Unbind ``key`` if it is still bound to ``uid`` (CAS at the message naming it)."""
        subject = claim_subject(self._prefix, key)
        for _ in range(_TRIES):
            last = self._client.last(subject)
            if last is None or _uid_of(last, subject) != uid:
                return
            if self._client.publish(subject, _body(""), expect=last.stream_seq, token=_token()):
                return
        raise LockHeldError(f"the claim on {subject} kept changing")


def _uid_of(msg: Message | None, subject: str) -> str:
    """The uid a claim message binds ("" for none, or a release)."""
    if msg is None:
        return ""
    uid = msg.head.get("uid")
    if not isinstance(uid, str) or (uid and not _well_formed(uid)):
        raise JournalCorruptError(
            f"JetStream message {msg.stream_seq} on {subject} is not a key claim"
        )
    return uid


def _well_formed(uid: str) -> bool:
    try:
        check_uid(uid)
    except InvalidArgumentError:
        return False
    return True


def _body(uid: str) -> bytes:
    return json.dumps({"k": "k", "uid": uid}, separators=(",", ":")).encode() + b"\n"


def _token() -> str:
    return secrets.token_hex(12)
