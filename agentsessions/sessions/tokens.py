"""Bearer tokens scoped to projects, kept hashed in the home's ``tokens.json``.

A token is ``agst_<id>_<secret>``: the recognisable prefix (a secret scanner or a reader of
a log can tell what leaked), a 12-hex-digit id (not secret: ``token list`` and ``token
revoke`` name it, and the server finds the record by it), and 32 random bytes in base64url.
The file keeps, per token: its id, name (the identity recorded as the actor on approvals),
projects, the admin flag (``token create --admin``: the token may register a harness at an
address off this machine), the SHA-256 of the whole token text, created time, optional
expiry and revocation time. The token text itself is printed once by ``token create`` and
stored nowhere.

Why SHA-256 and not a slow KDF (bcrypt, scrypt, argon2): a slow KDF protects low-entropy
secrets (passwords) against guessing after the hash file leaks. A token carries 256 bits
from :func:`secrets.token_bytes`: no guessing succeeds against its hash however fast the
hash is, while a KDF would cost every RPC milliseconds of CPU (and hand a client without a
valid token a cheap way to burn the server's). The comparison is constant-time
(:func:`hmac.compare_digest`) so the server's timing does not tell how much of a hash
matched.

Invariants: the file is written whole (tmp, fsync, rename, directory fsync: the durable
helpers) with mode 0600, under an exclusive ``flock`` on ``tokens.lock`` so two ``token
create`` never lose one another's token; a reader (the server) re-reads it when its stat
changes, so a revocation or a new token takes effect without a restart. This module imports
no grpc: ``agentsessions token create`` uses it without the ``grpc`` extra.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agentsessions.errors import (
    InvalidArgumentError,
    StorageError,
    TokenNotFoundError,
    TokensCorruptError,
    UnauthenticatedError,
)
from agentsessions.journal.format.durable import DEFAULT_FS, FileSystem
from agentsessions.v1.ids import check_project

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no concurrent writers are guarded there
    fcntl = None  # type: ignore[assignment]

TOKEN_PREFIX = "agst_"
FILE_NAME = "tokens.json"
LOCK_NAME = "tokens.lock"
FILE_FORMAT = "agentsessions.tokens"
FILE_VERSION = 1
_ID_RE = re.compile(r"^[0-9a-f]{12}$")
_SECRET_BYTES = 32
_NAME_CHARS = 128
_CREATE_HINT = "create one with: agentsessions token create --project PROJECT"
TOKEN_ISSUER = "agentsessions-token"
"""The ``issuer`` of the IdentityRef a token holder acts as (:attr:`Principal.identity`)."""
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


@dataclass(frozen=True)
class TokenInfo:
    """One token as the file keeps it (its hash, never its text)."""

    id: str
    name: str
    projects: tuple[str, ...]
    sha256: str
    created_ns: int
    expires_ns: int = 0  # 0: never
    revoked_ns: int = 0  # 0: not revoked
    admin: bool = False  # may register a harness address off loopback (token create --admin)
    name_authors: bool = False  # its inputs' authors are the client's (token create --name-authors)

    @property
    def principal(self) -> str:
        """The identity a call with this token acts as (recorded on approvals)."""
        return self.name or f"token-{self.id}"

    def state(self, now_ns: int) -> str:
        """``active``, ``expired`` or ``revoked``."""
        if self.revoked_ns:
            return "revoked"
        if self.expires_ns and now_ns >= self.expires_ns:
            return "expired"
        return "active"

    def to_json(self, now_ns: int | None = None) -> dict[str, Any]:
        """The ``token list --json`` object: everything but the hash."""
        out: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "principal": self.principal,
            "projects": list(self.projects),
            "admin": self.admin,
            "name_authors": self.name_authors,
            "created_ns": self.created_ns,
            "expires_ns": self.expires_ns,
            "revoked_ns": self.revoked_ns,
        }
        if now_ns is not None:
            out["state"] = self.state(now_ns)
        return out

    def _record(self) -> dict[str, Any]:
        return {**self.to_json(), "sha256": self.sha256}


@dataclass(frozen=True)
class Principal:
    """Who a call acts as: a token's identity and projects (``projects`` None: every
    project, the operator of a listener started without auth)."""

    name: str
    projects: frozenset[str] | None
    token_id: str = ""
    primary: str = ""  # the project a request naming none lands in
    admin: bool = False  # the token's admin flag (token create --admin)
    names_authors: bool = False  # the token's name_authors flag (token create --name-authors)

    @classmethod
    def of(cls, info: TokenInfo) -> Principal:
        """The principal behind ``info``."""
        return cls(
            name=info.principal,
            projects=frozenset(info.projects),
            token_id=info.id,
            primary=info.projects[0],
            admin=info.admin,
            names_authors=info.name_authors,
        )

    @property
    def identity(self) -> dict[str, str]:
        """The IdentityRef a token holder's sessions and inputs are recorded with (unless
        its token may name authors): its name, issued by this server's tokens, its id."""
        return {"principal": self.name, "issuer": TOKEN_ISSUER, "subject": self.token_id}

    def allows(self, project: str) -> bool:
        """True if this principal may act in ``project``."""
        return self.projects is None or project in self.projects

    @property
    def is_admin(self) -> bool:
        """True for an admin token, and for the operator (a listener without auth)."""
        return self.projects is None or self.admin


def hash_token(token: str) -> str:
    """The SHA-256 (hex) the file keeps for ``token``."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def parse_duration(text: str) -> int:
    """``90s``, ``15m``, ``12h``, ``30d``, ``2w`` as seconds (> 0); else InvalidArgumentError."""
    match = re.fullmatch(r"\s*(\d+)\s*([smhdw])\s*", text)
    seconds = int(match.group(1)) * _UNITS[match.group(2)] if match else 0
    if seconds <= 0:
        raise InvalidArgumentError(
            f"invalid duration {text!r}: expected a positive number and a unit (s, m, h, d, w)",
            hint="for example 30d",
            param="expires",
        )
    return seconds


def _check_name(name: str) -> str:
    if len(name) > _NAME_CHARS or not name.isprintable() or name != name.strip():
        raise InvalidArgumentError(
            f"invalid token name {name!r}: printable, no surrounding spaces, at most "
            f"{_NAME_CHARS} characters",
            hint="for example alice",
            param="token_name",
        )
    return name


class TokenStore:
    """The tokens of one home: create, list, revoke (the CLI) and authenticate (the server).

    Thread-safe. ``clock`` (wall time in ns: expiry is a date) and ``fs`` are injectable.
    """

    def __init__(
        self,
        home: str | os.PathLike[str],
        *,
        fs: FileSystem = DEFAULT_FS,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.home = Path(home)
        self.path = self.home / FILE_NAME
        self._fs = fs
        self._clock = clock
        self._mutex = threading.Lock()
        self._seen: tuple[int, ...] | None = None  # (ino, size, mtime, ctime) last loaded
        self._by_id: dict[str, TokenInfo] = {}

    # -- the CLI's side ----------------------------------------------------------------
    def create(
        self,
        *,
        projects: Sequence[str],
        name: str = "",
        expires_in: int | None = None,
        admin: bool = False,
        name_authors: bool = False,
    ) -> tuple[str, TokenInfo]:
        """A new token for ``projects`` (the first is where a request naming none lands),
        with the admin flag if ``admin`` and the name-authors flag if ``name_authors`` (a
        producer relaying others' words: the authors it names are recorded, not the
        token's identity): its text (shown once, kept nowhere) and its record, durable
        before this returns."""
        chosen = list(dict.fromkeys(check_project(p) for p in projects))
        if not chosen:
            raise InvalidArgumentError("a token needs at least one project", param="projects")
        if expires_in is not None and expires_in <= 0:
            raise InvalidArgumentError(f"expiry must be positive, got {expires_in} s")
        _check_name(name)
        with self._locked() as tokens:
            token_id = secrets.token_hex(6)
            while token_id in tokens:  # 48 bits: a clash is a curiosity, never a shared id
                token_id = secrets.token_hex(6)
            secret = base64.urlsafe_b64encode(secrets.token_bytes(_SECRET_BYTES))
            text = f"{TOKEN_PREFIX}{token_id}_{secret.rstrip(b'=').decode('ascii')}"
            now = self._clock()
            info = TokenInfo(
                id=token_id,
                name=name,
                projects=tuple(chosen),
                sha256=hash_token(text),
                created_ns=now,
                expires_ns=now + expires_in * 1_000_000_000 if expires_in else 0,
                admin=admin,
                name_authors=name_authors,
            )
            tokens[token_id] = info
            self._write(tokens)
        return text, info

    def list(self) -> list[TokenInfo]:
        """Every token (revoked and expired ones too), oldest first."""
        with self._mutex:
            tokens = self._read()
        return sorted(tokens.values(), key=lambda t: (t.created_ns, t.id))

    def revoke(self, token_id: str) -> TokenInfo:
        """Mark ``token_id`` revoked (kept for the record); idempotent. TokenNotFoundError
        (exit 3) for an unknown id."""
        with self._locked() as tokens:
            info = tokens.get(token_id)
            if info is None:
                raise TokenNotFoundError(
                    f"no token {token_id!r} in {self.path}",
                    hint="agentsessions token list",
                    token=token_id,
                )
            if not info.revoked_ns:
                info = replace(info, revoked_ns=self._clock())
                tokens[token_id] = info
                self._write(tokens)
        return info

    # -- the server's side -------------------------------------------------------------
    def authenticate(self, token: str) -> TokenInfo:
        """The live token whose text is ``token``; UnauthenticatedError (UNAUTHENTICATED)
        for a malformed, unknown, wrong, revoked or expired one."""
        token_id = _token_id(token)
        with self._mutex:
            self._refresh()
            info = self._by_id.get(token_id)
        # compared even for an unknown id, against a hash nothing matches: the same work
        expected = info.sha256 if info is not None else "0" * 64
        if not hmac.compare_digest(hash_token(token), expected) or info is None:
            raise UnauthenticatedError("invalid bearer token", hint=_CREATE_HINT)
        if info.revoked_ns:
            raise UnauthenticatedError(
                f"bearer token {info.id} was revoked", hint=_CREATE_HINT, token=info.id
            )
        if info.expires_ns and self._clock() >= info.expires_ns:
            raise UnauthenticatedError(
                f"bearer token {info.id} expired", hint=_CREATE_HINT, token=info.id
            )
        return info

    def _refresh(self) -> None:
        """Reload the file if it changed since the last load (a stat per call)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._seen, self._by_id = None, {}
            return
        except OSError as exc:
            raise StorageError(f"stat {self.path}: {exc.strerror}", path=str(self.path)) from exc
        seen = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if seen != self._seen:
            self._by_id = self._read()
            self._seen = seen

    # -- the file ----------------------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, TokenInfo]]:
        """The tokens, read under the exclusive file lock held until the block ends."""
        try:
            self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.home / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StorageError(
                f"open {self.home / LOCK_NAME}: {exc.strerror}", path=str(self.home)
            ) from exc
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            with self._mutex:
                yield self._read()
        finally:
            os.close(fd)  # closing releases the flock

    def _read(self) -> dict[str, TokenInfo]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise StorageError(f"read {self.path}: {exc.strerror}", path=str(self.path)) from exc
        return _parse(data, self.path)

    def _write(self, tokens: dict[str, TokenInfo]) -> None:
        body = {
            "format": FILE_FORMAT,
            "version": FILE_VERSION,
            "tokens": [t._record() for t in sorted(tokens.values(), key=lambda t: t.id)],
        }
        data = json.dumps(body, indent=1, sort_keys=True).encode("utf-8") + b"\n"
        self._fs.write_file_atomic(self.path, data)  # a new file: mode 0600
        self._seen = None


def _token_id(token: str) -> str:
    """The id inside ``token``; UnauthenticatedError if it is not one of ours."""
    body = token[len(TOKEN_PREFIX) :] if token.startswith(TOKEN_PREFIX) else ""
    token_id, sep, secret = body.partition("_")
    if not sep or not _ID_RE.match(token_id) or not secret:
        raise UnauthenticatedError(
            f"malformed bearer token: expected {TOKEN_PREFIX}<id>_<secret>", hint=_CREATE_HINT
        )
    return token_id


def _parse(data: bytes, path: Path) -> dict[str, TokenInfo]:
    """The tokens in a ``tokens.json``; TokensCorruptError (exit 8) for anything else."""

    def bad(why: str) -> TokensCorruptError:
        return TokensCorruptError(
            f"{path} is not a token file: {why}",
            hint="restore it from a backup, or move it away and create new tokens",
            path=str(path),
        )

    try:
        body = json.loads(data)
    except ValueError as exc:
        raise bad(f"not JSON ({exc})") from None
    if not isinstance(body, dict) or body.get("format") != FILE_FORMAT:
        raise bad(f"no format {FILE_FORMAT!r}")
    if body.get("version") != FILE_VERSION or not isinstance(body.get("tokens"), list):
        raise bad(f"version {body.get('version')!r} unknown or no token list")
    out: dict[str, TokenInfo] = {}
    for item in body["tokens"]:
        try:
            info = TokenInfo(
                id=_str(item["id"]),
                name=_str(item["name"]),
                projects=tuple(_str(p) for p in item["projects"]),
                sha256=_str(item["sha256"]),
                created_ns=_int(item["created_ns"]),
                expires_ns=_int(item.get("expires_ns", 0)),
                revoked_ns=_int(item.get("revoked_ns", 0)),
                admin=_bool(item.get("admin", False)),
                name_authors=_bool(item.get("name_authors", False)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise bad(f"a token record is malformed ({exc})") from None
        if not _ID_RE.match(info.id) or not info.projects or len(info.sha256) != 64:
            raise bad(f"token record {info.id!r} is malformed")
        out[info.id] = info
    return out


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected true or false, got {value!r}")
    return value


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TypeError(f"expected a non-negative integer, got {value!r}")
    return value
