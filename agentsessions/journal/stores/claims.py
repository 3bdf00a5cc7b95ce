"""Key claims: the store capability behind finding a session by a key of the caller's.

A *key* is any string a caller chooses to name one session of a project by: a framework's
conversation or thread id (the adapters in ``agentsessions.integrations``), and later an
origin's ``source`` and ``subject`` (issue 22 derives its key from them; the key stays a
generic string here so the store knows nothing of origins). A *claim* binds a key to one
session uid, atomically: of any number of processes on any hosts claiming one unbound key
at once, exactly one binds it and every one is told that uid.

Invariants every implementation keeps (``tests/contract/test_claims_contract.py``):

- a claim is create-only: :meth:`KeyClaims.claim` binds ``key`` to ``uid`` only if the key is
  unbound, and returns the uid bound, ours or the earlier winner's; it returns only once
  the binding is durable (the file store's fsyncs, JetStream's acknowledged publish), so a
  session created for a returned uid is never left without its claim by a crash;
- a release unbinds only a binding still to the uid named (a stale releaser never undoes
  a newer claim); then the key can be claimed again;
- the store keeps only :attr:`ClaimKey.digest`, the SHA-256 of the project and the key,
  never the key: a key may be sensitive (an issue title, a user's thread id), and the
  store's listing of claims then says nothing about it. A claim holds no content of a
  session, so it is the same with or without a master key (an encrypted store's claims are
  found by a process without its key, as its sessions' metadata is);
- a claim says nothing about whether its session exists: a claimer creates the session
  after its claim, and may crash between the two; the engine (``sessions/claims.py``)
  completes such a claim, and treats one bound to a deleted session as released.

The capability is a type: a store declares it by naming :class:`KeyClaims` among its bases
(``stores/capabilities.py``: mypy checks the methods), and the engine asks with
``KEY_CLAIMS`` (``capabilities.py``), never with ``getattr``.
"""

from __future__ import annotations

import hashlib
import re
from typing import Protocol

from agentsessions.errors import InvalidArgumentError
from agentsessions.v1.ids import check_project
from agentsessions.valueclass import value

MAX_KEY_BYTES = 4096
_DIGEST = re.compile(r"[0-9a-f]{64}")


@value(frozen=True)
class ClaimKey:
    """A key of project ``project``, as stores see it: only its digest (see the module)."""

    project: str
    digest: str

    @classmethod
    def of(cls, project: str, key: str, *, space: str = "") -> ClaimKey:
        """The claim key of ``key`` in ``project`` (InvalidArgumentError for an empty key,
        one over 4 KiB, or a bad project).

        ``space`` names a key space apart from callers' own keys (the engine's origins):
        its digest's input begins with a NUL, which a project name (the start of a caller's
        key's input) never does, so no caller's key can name a session of another space."""
        check_project(project)
        if not isinstance(key, str) or not key:
            raise InvalidArgumentError("a session key must be a non-empty string")
        raw = key.encode("utf-8", "surrogatepass")
        if len(raw) > MAX_KEY_BYTES:
            raise InvalidArgumentError(
                f"a session key has at most {MAX_KEY_BYTES} bytes, this one {len(raw)}"
            )
        # the project is hashed in, and kept beside: one key names a session per project
        prefix = b"\0" + space.encode() + b"\0" if space else b""
        digest = hashlib.sha256(prefix + project.encode() + b"\0" + raw).hexdigest()
        return cls(project, digest)

    @classmethod
    def from_digest(cls, project: str, digest: str) -> ClaimKey:
        """A claim key rebuilt from its project and digest (a session's claim annotation)."""
        if not _DIGEST.fullmatch(digest):
            raise InvalidArgumentError(f"invalid claim digest {digest!r}: 64 lowercase hex")
        return cls(check_project(project), digest)


class KeyClaims(Protocol):
    """A store that can bind a key to a session uid atomically (see the module)."""

    def claim(self, key: ClaimKey, uid: str) -> str:
        """Bind ``key`` to ``uid`` if it is unbound; the uid it is bound to (``uid``, or the
        earlier winner's), durably bound when this returns."""
        ...

    def lookup(self, key: ClaimKey) -> str:
        """The uid ``key`` is bound to, "" if none (a read: nothing is written)."""
        ...

    def release(self, key: ClaimKey, uid: str) -> None:
        """Unbind ``key`` if it is still bound to ``uid`` (else nothing); durable."""
        ...
