"""Keys for encryption at rest: the master key, and each session's wrapped data key.

Every encrypted session (and each of its tool stores) has its own random 256-bit data key.
The data key is never stored in the clear: it lives only in the store's ``KEY`` file,
wrapped (AES-256-GCM) by the master key, which the user keeps outside the store (a key
file, or ``AGENTSESSIONS_MASTER_KEY`` in the environment). ``docs/FORMAT.md`` section 15
documents the files and what shredding does.

Invariants:
- a ``KEY`` file is written once (atomically and durably) and then only rewrapped (master
  key rotation: same data key, new wrapping) or shredded, never changed otherwise;
- the wrapping binds the data key to its scope (``sess-<uid>`` or ``sess-<uid>/<tool>``)
  and to the master key's id, so a ``KEY`` copied to another session does not unwrap;
- a shred writes ``SHREDDED`` first, then overwrites, syncs and unlinks ``KEY``, so a
  crash between the two leaves a session that a second ``shred`` finishes, never one whose
  content is readable and that claims to be shredded only in part;
- no key bytes appear in a repr, a message or an error field.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import stat
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from agentsessions.errors import (
    InvalidArgumentError,
    JournalCorruptError,
    KeyShreddedError,
    MasterKeyError,
    SessionKeyError,
)
from agentsessions.journal.format.durable import DEFAULT_FS, FileSystem

KEY_BYTES = 32
NONCE_BYTES = 12
MASTER_KEY_ENV = "AGENTSESSIONS_MASTER_KEY"
KEY_FILE_ENV = "AGENTSESSIONS_KEY_FILE"
KEY_NAME = "KEY"
SHREDDED_NAME = "SHREDDED"
WRAP_FORMAT = 1
WRAP_ALG = "A256GCM"
_WRAP_AAD = b"agentsessions.datakey.v1\x00"
_KEY_ID_LABEL = b"agentsessions.master-key-id.v1\x00"
_HINT = "give the master key: key_file, AGENTSESSIONS_KEY_FILE or AGENTSESSIONS_MASTER_KEY"


@dataclass(frozen=True)
class MasterKey:
    """The 256-bit key that wraps data keys; ``source`` says where it came from (no bytes)."""

    key: bytes = field(repr=False)
    source: str = ""

    def __post_init__(self) -> None:
        if len(self.key) != KEY_BYTES:
            raise MasterKeyError(
                f"master key from {self.source or 'input'} is {len(self.key)} bytes; "
                f"expected {KEY_BYTES}",
                hint="make one with: python3 -c 'import os,base64;"
                "print(base64.b64encode(os.urandom(32)).decode())'",
            )

    @property
    def key_id(self) -> str:
        """16 hex digits naming this key (a hash of it): tells a wrong key from damage."""
        return hashlib.sha256(_KEY_ID_LABEL + self.key).hexdigest()[:16]

    @classmethod
    def generate(cls) -> MasterKey:
        """A new random master key."""
        return cls(os.urandom(KEY_BYTES), "generated")

    @classmethod
    def from_base64(cls, text: str, *, source: str) -> MasterKey:
        """Decode a base64 master key (whitespace around it is ignored)."""
        try:
            raw = base64.b64decode(text.strip().encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError, ValueError):
            raise MasterKeyError(
                f"master key from {source} is not base64 of {KEY_BYTES} bytes", hint=_HINT
            ) from None
        return cls(raw, source)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> MasterKey:
        """Read a key file: base64 text of 32 bytes, readable by its owner only."""
        source = f"key file {os.fspath(path)}"
        try:
            st = os.stat(path)
            if not stat.S_ISREG(st.st_mode):
                raise MasterKeyError(
                    f"{source} is not a regular file", hint=_HINT, param="key_file"
                )
            if st.st_mode & 0o077:
                raise MasterKeyError(
                    f"{source} may be read or written by others "
                    f"(mode {stat.S_IMODE(st.st_mode):04o})",
                    hint=f"chmod 600 {os.fspath(path)}",
                )
            data = Path(path).read_bytes()
        except OSError as exc:
            raise MasterKeyError(
                f"cannot read {source}: {exc.strerror}", hint=_HINT, param="key_file"
            ) from None
        try:
            text = data.decode("ascii")
        except UnicodeDecodeError:
            raise MasterKeyError(
                f"{source} is not base64 of {KEY_BYTES} bytes", hint=_HINT
            ) from None
        return cls.from_base64(text, source=source)


def resolve_master_key(
    key_file: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> MasterKey | None:
    """The master key from ``key_file``, else ``AGENTSESSIONS_KEY_FILE``, else
    ``AGENTSESSIONS_MASTER_KEY`` (base64); None when none is given. Any of them may name the
    OS keyring instead, ``keyring:NAME`` (:func:`from_keyring`)."""
    env = os.environ if environ is None else environ
    if key_file is not None:
        return _from_spec(os.fspath(key_file))
    if env.get(KEY_FILE_ENV):
        return _from_spec(env[KEY_FILE_ENV])
    if env.get(MASTER_KEY_ENV):
        if env[MASTER_KEY_ENV].startswith(KEYRING_PREFIX):
            return from_keyring(env[MASTER_KEY_ENV][len(KEYRING_PREFIX) :])
        return MasterKey.from_base64(env[MASTER_KEY_ENV], source=MASTER_KEY_ENV)
    return None


KEYRING_PREFIX = "keyring:"
KEYRING_SERVICE = "agentsessions"
KEYRING_DEFAULT_NAME = "master-key"


def _from_spec(spec: str) -> MasterKey:
    if spec.startswith(KEYRING_PREFIX):
        return from_keyring(spec[len(KEYRING_PREFIX) :])
    return MasterKey.from_file(spec)


def _keyring_source(name: str) -> str:
    return f"the OS keyring (service {KEYRING_SERVICE!r}, name {name or KEYRING_DEFAULT_NAME!r})"


def _keyring() -> object:
    try:
        import keyring
    except ImportError:
        raise MasterKeyError(
            "a master key in the OS keyring needs the 'keyring' package",
            hint="pip install 'agentsessions[keyring]'",
        ) from None
    return keyring


def from_keyring(name: str = "") -> MasterKey:
    """The master key kept (base64) in the OS keyring under service ``agentsessions`` and
    ``name`` (default ``master-key``), through the optional ``keyring`` package. Without it,
    without a keyring backend on this machine (a server without a desktop session), or with
    no such entry: MasterKeyError (exit 26) saying which."""
    ring: Any = _keyring()
    from keyring.errors import KeyringError, NoKeyringError

    user, source = name or KEYRING_DEFAULT_NAME, _keyring_source(name)
    try:
        text = ring.get_password(KEYRING_SERVICE, user)
    except NoKeyringError:
        raise MasterKeyError(
            f"{source}: no OS keyring backend is available on this machine",
            hint="give a key file (key_file), or install a keyring backend",
            param="keyring",
        ) from None
    except KeyringError as exc:
        raise MasterKeyError(f"{source} cannot be read: {exc}") from None
    if text is None:
        raise MasterKeyError(
            f"no master key in {source}",
            hint=f"agentsessions keys new keyring:{name} makes one there",
        )
    return MasterKey.from_base64(text, source=source)


def to_keyring(key: MasterKey, name: str = "") -> None:
    """Keep ``key`` (base64) in the OS keyring under ``name``; refuses to replace an entry
    (InvalidArgumentError): a replaced master key cannot read what the old one wrapped."""
    ring: Any = _keyring()
    from keyring.errors import KeyringError, NoKeyringError

    user, source = name or KEYRING_DEFAULT_NAME, _keyring_source(name)
    try:
        if ring.get_password(KEYRING_SERVICE, user) is not None:
            raise InvalidArgumentError(
                f"{source} already holds a master key: refusing to replace it",
                hint="choose another name: keyring:NAME",
            )
        ring.set_password(KEYRING_SERVICE, user, base64.b64encode(key.key).decode())
    except NoKeyringError:
        raise MasterKeyError(
            f"{source}: no OS keyring backend is available on this machine",
            hint="write a key file instead: agentsessions keys new FILE",
        ) from None
    except KeyringError as exc:
        raise MasterKeyError(f"{source} cannot be written: {exc}") from None


def _wrap_aad(scope: str, key_id: str) -> bytes:
    return _WRAP_AAD + scope.encode() + b"\x00" + key_id.encode()


def wrap(data_key: bytes, master: MasterKey, scope: str) -> bytes:
    """The ``KEY`` file's bytes: ``data_key`` wrapped by ``master`` for ``scope``."""
    if len(data_key) != KEY_BYTES:
        raise InvalidArgumentError(f"a data key is {KEY_BYTES} bytes, not {len(data_key)}")
    nonce = os.urandom(NONCE_BYTES)
    sealed = AESGCM(master.key).encrypt(nonce, data_key, _wrap_aad(scope, master.key_id))
    doc = {
        "alg": WRAP_ALG,
        "format": WRAP_FORMAT,
        "master_key_id": master.key_id,
        "nonce": base64.b64encode(nonce).decode(),
        "scope": scope,
        "wrapped": base64.b64encode(sealed).decode(),
    }
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode() + b"\n"


def _parse(content: bytes, where: str) -> dict[str, str]:
    try:
        doc = json.loads(content)
        ok = (
            isinstance(doc, dict)
            and doc.get("format") == WRAP_FORMAT
            and doc.get("alg") == WRAP_ALG
            and all(isinstance(doc.get(k), str) for k in ("master_key_id", "nonce", "scope"))
            and isinstance(doc.get("wrapped"), str)
        )
    except (ValueError, UnicodeDecodeError):
        ok = False
    if not ok:
        raise JournalCorruptError(f"{where} is not a wrapped data key", path=where)
    return {k: str(v) for k, v in doc.items()}


def unwrap(content: bytes, master: MasterKey, scope: str, *, where: str = KEY_NAME) -> bytes:
    """The data key in a ``KEY`` file's ``content``; MasterKeyError for another master key."""
    doc = _parse(content, where)
    if doc["scope"] != scope:
        raise JournalCorruptError(
            f"{where} wraps the key of {doc['scope']!r}, not {scope!r}", path=where
        )
    if doc["master_key_id"] != master.key_id:
        raise MasterKeyError(
            f"{scope}: the data key is wrapped by master key {doc['master_key_id']}, "
            f"not by the one given ({master.key_id}, from {master.source})",
            hint=_HINT,
            param="key_file",
            session=scope,
        )
    try:
        nonce = base64.b64decode(doc["nonce"], validate=True)
        sealed = base64.b64decode(doc["wrapped"], validate=True)
        key = AESGCM(master.key).decrypt(nonce, sealed, _wrap_aad(scope, master.key_id))
    except (binascii.Error, ValueError, InvalidTag):
        raise JournalCorruptError(
            f"{where}: the wrapped data key of {scope} does not authenticate (damaged)",
            path=where,
        ) from None
    if len(key) != KEY_BYTES:
        raise JournalCorruptError(f"{where}: the data key of {scope} is malformed", path=where)
    return key


def rewrap(content: bytes, old: MasterKey, new: MasterKey, scope: str) -> bytes:
    """``content`` wrapped by ``new`` instead of ``old``: same data key, journal untouched."""
    return wrap(unwrap(content, old, scope), new, scope)


class RewrapCount(NamedTuple):
    """What a master-key rotation over one store did: keys rewrapped, keys already under
    the new master key (a rotation cut short, finished), shredded ones (nothing to rewrap)."""

    rewrapped: int
    already: int
    shredded: int


@dataclass(frozen=True)
class KeyDir:
    """The key files of one store directory (a session's, or a tool store's in it)."""

    path: Path
    scope: str
    fs: FileSystem = field(default=DEFAULT_FS, repr=False)

    @property
    def key_path(self) -> Path:
        """The wrapped data key."""
        return self.path / KEY_NAME

    @property
    def shredded_path(self) -> Path:
        """The marker a shred leaves: this store's content is gone for good."""
        return self.path / SHREDDED_NAME

    def create(self, master: MasterKey) -> bytes:
        """Make, wrap and durably store a new data key; returns it. Refuses to replace one."""
        if self.key_path.exists() or self.shredded_path.exists():
            raise InvalidArgumentError(f"{self.scope} already has a data key", session=self.scope)
        key = os.urandom(KEY_BYTES)
        self.fs.write_file_atomic(self.key_path, wrap(key, master, self.scope))
        return key

    def load(self, master: MasterKey | None) -> bytes:
        """The data key; KeyShreddedError after a shred, MasterKeyError with no or a wrong key."""
        if self.shredded_path.exists():
            raise KeyShreddedError(
                f"{self.scope}: the data key was shredded; the content is unreadable for good",
                hint="verify SESSION still checks the journal's structure",
                session=self.scope,
            )
        try:
            content = self.key_path.read_bytes()
        except FileNotFoundError:
            raise SessionKeyError(
                f"{self.scope}: the wrapped data key ({KEY_NAME}) is missing",
                hint="restore it from a backup of the session directory",
                session=self.scope,
                path=str(self.key_path),
            ) from None
        except OSError as exc:
            raise SessionKeyError(
                f"{self.scope}: cannot read {self.key_path}: {exc.strerror}", session=self.scope
            ) from None
        if master is None:
            raise MasterKeyError(
                f"{self.scope} is encrypted and no master key was given",
                hint=_HINT,
                param="key_file",
                session=self.scope,
            )
        return unwrap(content, master, self.scope, where=str(self.key_path))

    def rewrap(self, old: MasterKey, new: MasterKey) -> None:
        """Rewrap the data key under ``new`` (atomically and durably); no journal byte moves."""
        self.load(old)  # the clear errors for a shredded, missing or wrongly keyed store
        content = self.key_path.read_bytes()
        self.fs.write_file_atomic(self.key_path, rewrap(content, old, new, self.scope))

    def wrapped_by(self) -> str:
        """The id of the master key this store's data key is wrapped by (``""``: none)."""
        try:
            return _parse(self.key_path.read_bytes(), str(self.key_path))["master_key_id"]
        except FileNotFoundError:
            return ""

    def shred(self) -> bool:
        """Destroy the data key for good; False if it was already gone (idempotent)."""
        if not self.shredded_path.exists():
            marker = {"scope": self.scope, "shredded_unix_ms": time.time_ns() // 1_000_000}
            self.fs.write_file_atomic(
                self.shredded_path, json.dumps(marker, sort_keys=True).encode() + b"\n"
            )
        return self.fs.shred_file(self.key_path)


def rewrap_all(dirs: Iterable[KeyDir], old: MasterKey, new: MasterKey) -> int:
    """Master-key rotation: rewrap every data key in ``dirs`` from ``old`` to ``new``.

    Every key is unwrapped with ``old`` first, so a wrong ``old`` (or a damaged ``KEY``)
    changes nothing; a key already wrapped by ``new`` is skipped, so a rotation cut by a
    crash is finished by running it again. Shredded stores have no key and are skipped.
    Returns how many keys were rewrapped. Journals are never touched.
    """
    todo = []
    for kdir in dirs:
        if kdir.shredded_path.exists() or not kdir.key_path.exists():
            continue
        if kdir.wrapped_by() == new.key_id:
            continue
        kdir.load(old)
        todo.append(kdir)
    for kdir in todo:
        kdir.rewrap(old, new)
    return len(todo)
