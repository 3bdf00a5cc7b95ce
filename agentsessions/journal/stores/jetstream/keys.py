"""The wrapped data keys of a JetStream store's encrypted sessions, in a key stream of their own.

The journal stream denies delete and purge (that is what keeps numbers from being reused),
so a key kept there could never be destroyed. Each data key is stored instead, wrapped by
the master key (``keys.wrap``, compact JSON, scope ``uid`` or ``uid/tool``), as the only
message of a subject in a second stream, ``<stream>_KEYS`` (subjects ``<prefix>_keys.>``):

| subject | what |
|---|---|
| ``<prefix>_keys.<uid>`` | the session's wrapped data key |
| ``<prefix>_keys.<uid>.<hex name>`` | a tool store's |

The key stream keeps one message per subject (``max_msgs_per_subject: 1``: a rewrap replaces
the old wrapping), has no other limit (a key that expired would take its session's content
with it), uses file storage and allows delete and purge, for shredding. The server's
``sync_interval: always`` is server-wide, so a key is on disk before its write is
acknowledged, like every journal commit.

Invariants:
- a key is written with CAS at "no message" before the session's metadata (the
  ``encrypted`` marker promises it), and replaced only by a rewrap (CAS at the message read);
- shredding secure-erases each key message (the server overwrites it) and then purges the
  subjects, after a ``SHREDDED`` marker on the journal stream (``<prefix>.s.<uid>``, which
  cannot be deleted): a crash between them leaves a marker that every read honours and a
  second shred finishes;
- nothing here holds an unwrapped key: callers unwrap with ``keys.unwrap``.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import nats.js.errors
from nats.js import api

from agentsessions.errors import UnavailableError
from agentsessions.journal.stores.jetstream.client import Client
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.outcome import WRONG_LAST_SEQUENCE

T = TypeVar("T")


def key_stream_name(options: JetStreamOptions) -> str:
    """The key stream beside journal stream ``options.stream``."""
    return f"{options.stream}_KEYS"


def key_prefix(options: JetStreamOptions) -> str:
    """The key stream's subject prefix (a token apart from the journal's ``<prefix>.>``)."""
    return f"{options.prefix}_keys"


def shred_subject(prefix: str, uid: str) -> str:
    """The journal stream's subject of session ``uid``'s SHREDDED marker."""
    return f"{prefix}.s.{uid}"


def key_config(options: JetStreamOptions) -> dict[str, Any]:
    """The settings the key stream is created with (and required of an existing one)."""
    return {
        "name": key_stream_name(options),
        "subjects": [f"{key_prefix(options)}.>"],
        "storage": "file",
        "num_replicas": options.replicas,
        "deny_delete": False,
        "deny_purge": False,
        "allow_direct": True,
        "duplicate_window": 120.0,
        "max_msgs_per_subject": 1,
    }


def key_problems(config: Any, options: JetStreamOptions) -> list[str]:
    """What is wrong with an existing key stream's ``config`` (empty: nothing)."""
    problems = []
    storage = getattr(config.storage, "value", config.storage)
    if storage != "file":
        problems.append(f"storage is {storage!r}, not 'file' (memory is lost on restart)")
    if config.deny_delete or config.deny_purge:
        problems.append("deleting or purging messages is denied (keys could not be shredded)")
    if config.max_msgs_per_subject != 1:
        problems.append(
            f"max_msgs_per_subject is {config.max_msgs_per_subject}, not 1 (old wrappings "
            "of a rotated key would stay)"
        )
    for name in ("max_msgs", "max_bytes"):
        value = getattr(config, name)
        if value not in (None, -1, 0):
            problems.append(f"{name} is {value} (keys, and so sessions, would be dropped)")
    if config.max_age:
        problems.append(f"max_age is {config.max_age}s (keys would expire)")
    if f"{key_prefix(options)}.>" not in (config.subjects or []):
        problems.append(f"subjects {config.subjects} do not include {key_prefix(options)}.>")
    return problems


@dataclass(frozen=True)
class StoredKey:
    """One key message: its subject, stream sequence and the wrapped key's bytes."""

    subject: str
    stream_seq: int
    content: bytes


class KeyStream:
    """The key stream of one JetStream store (made on first use, checked when it exists)."""

    def __init__(self, client: Client, options: JetStreamOptions) -> None:
        self._client, self._opts = client, options
        self.name, self.prefix = key_stream_name(options), key_prefix(options)
        self._ready = False

    # -- names --------------------------------------------------------------------------
    def subject(self, uid: str, component: str = "") -> str:
        """The subject of the key of session ``uid`` (or of its tool store ``component``)."""
        base = f"{self.prefix}.{uid}"
        return f"{base}.{component.encode().hex()}" if component else base

    def scope_of_subject(self, subject: str) -> str:
        """Inverse of :meth:`subject`: the scope (``uid`` or ``uid/name``) it holds."""
        tokens = subject[len(self.prefix) + 1 :].split(".")
        if len(tokens) == 1:
            return tokens[0]
        return f"{tokens[0]}/{bytes.fromhex(tokens[1]).decode()}"

    # -- reads and writes ---------------------------------------------------------------
    def get(self, subject: str) -> StoredKey | None:
        """The key message on ``subject`` (None: none, or the key stream does not exist)."""
        self._ensure()
        return self._run(lambda js: self._get(js, subject))

    async def _get(self, js: Any, subject: str) -> StoredKey | None:
        try:
            raw = await js.get_msg(self.name, subject=subject)
        except nats.js.errors.NotFoundError:
            return None
        return StoredKey(subject, int(raw.seq or 0), bytes(raw.data or b""))

    def put(self, subject: str, content: bytes, *, expect: int) -> int | None:
        """Store ``content`` on ``subject`` if its last stream sequence is ``expect`` (0: no
        key yet); the new stream sequence, or None if another write came first."""
        self._ensure()
        headers = {"Nats-Expected-Last-Subject-Sequence": str(expect)}
        return self._run(lambda js: self._put(js, subject, content, headers))

    async def _put(
        self, js: Any, subject: str, content: bytes, headers: dict[str, str]
    ) -> int | None:
        try:
            ack = await js.publish(subject, content, headers=headers, stream=self.name)
        except nats.js.errors.APIError as exc:
            if exc.err_code == WRONG_LAST_SEQUENCE:
                return None
            raise UnavailableError(f"JetStream refused a key write on {subject}: {exc}") from None
        return int(ack.seq)

    def subjects(self, pattern: str = "") -> list[str]:
        """The key subjects matching ``pattern`` (default: all), sorted."""
        self._ensure()
        pattern = pattern or f"{self.prefix}.>"

        async def subjects(js: Any) -> list[str]:
            info = await js.stream_info(self.name, subjects_filter=pattern)
            return sorted(info.state.subjects or {})

        return self._run(subjects)

    def erase(self, uid: str) -> int:
        """Destroy every key of session ``uid`` (its own and its tool stores'): each message
        secure-erased (the server overwrites it before it answers), then the subjects
        purged. Returns how many keys were erased (0: already gone)."""
        self._ensure()
        subjects = [*self.subjects(self.subject(uid)), *self.subjects(f"{self.subject(uid)}.*")]
        erased = 0
        for subject in subjects:
            stored = self.get(subject)
            if stored is not None:
                self._run(self._eraser(stored.stream_seq))
                erased += 1
        for pattern in (self.subject(uid), f"{self.subject(uid)}.>"):
            self._run(self._purger(pattern))
        return erased

    def _eraser(self, seq: int) -> Callable[[Any], Coroutine[Any, Any, None]]:
        async def erase(js: Any) -> None:
            # no_erase left false: the server overwrites the message with random bytes;
            # NotFound: erased meanwhile (another shred)
            with contextlib.suppress(nats.js.errors.NotFoundError):
                await js.delete_msg(self.name, seq)

        return erase

    def _purger(self, pattern: str) -> Callable[[Any], Coroutine[Any, Any, None]]:
        async def purge(js: Any) -> None:
            await js.purge_stream(self.name, subject=pattern)

        return purge

    # -- the SHREDDED marker, on the journal stream -------------------------------------
    def mark_shredded(self, uid: str) -> None:
        """Publish ``uid``'s SHREDDED marker (once; a second shred keeps the first)."""
        subject = shred_subject(self._opts.prefix, uid)
        if self._client.last(subject) is not None:
            return
        marker = {"k": "x", "scope": uid, "shredded_unix_ms": time.time_ns() // 1_000_000}
        body = json.dumps(marker, separators=(",", ":")).encode() + b"\n"
        self._client.publish(subject, body, expect=0, token=f"shred-{uid}")

    def shredded(self, uid: str) -> bool:
        """Whether session ``uid`` carries a SHREDDED marker."""
        return self._client.last(shred_subject(self._opts.prefix, uid)) is not None

    # -- internals ----------------------------------------------------------------------
    def _ensure(self) -> None:
        if self._ready:
            return
        opts = self._opts

        async def ensure(js: Any) -> list[str]:
            try:
                info = await js.stream_info(self.name)
            except nats.js.errors.NotFoundError:
                config = key_config(opts)
                config["storage"] = api.StorageType(config["storage"])
                await js.add_stream(api.StreamConfig(**config))
                return []
            return key_problems(info.config, opts)

        problems = self._run(ensure)
        if problems:
            raise UnavailableError(
                f"the JetStream key stream {self.name!r} at {opts.url} cannot hold data keys: "
                + "; ".join(problems),
                hint="use another stream (?stream=NAME) or fix its settings",
            )
        self._ready = True

    def _run(self, fn: Callable[[Any], Coroutine[Any, Any, T]]) -> T:
        return self._client.run_js(fn)
