"""Master-key operations of a local engine: rotation, and making a new key file.

:class:`MasterKeys` is the engine's collaborator for rotation (over its
:class:`~.core.EngineCore`); loading and making a key file need no engine. A rotation
rewraps the data key of every encrypted session and tool store under a new master key
(``journal.crypto.keys.rewrap_all``): every key is unwrapped with the old master key before
any changes, so a wrong old key changes nothing; keys already wrapped by the new one are
skipped, so a rotation a crash cut is finished by running it again; no journal byte moves
(only ``KEY`` files are replaced, atomically and durably). Shredded stores have no key and
are counted apart. ``new_key_file`` writes a random master key, base64, to a new file of
mode 0600 (durably: losing it loses every session it wraps), or into the OS keyring
(``keyring:NAME``, the optional ``keyring`` package).
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentsessions.errors import InvalidArgumentError

if TYPE_CHECKING:
    from agentsessions.journal.crypto.keys import MasterKey

    from .core import EngineCore


@dataclass(frozen=True)
class Rotation:
    """What a rotation did: keys rewrapped, already under the new key, shredded (none)."""

    rewrapped: int
    already: int
    shredded: int
    new_key_id: str

    def to_json(self) -> dict[str, object]:
        """The ``keys rotate --json`` object."""
        return {
            "rewrapped": self.rewrapped,
            "already": self.already,
            "shredded": self.shredded,
            "new_key_id": self.new_key_id,
        }


class MasterKeys:
    """Master-key rotation of an engine's store, over its :class:`~.core.EngineCore`."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core

    def rotate(self, old: MasterKey, new: MasterKey) -> Rotation:
        """Rewrap every data key of the engine's store (the file store's ``KEY`` files, the
        JetStream store's key stream: each store's ``rewrap_keys``) from ``old`` to ``new``
        (see the module). MasterKeyError (exit 26), with nothing changed, when a key is not
        ``old``'s; StoreCapabilityError (exit 2) for a store that keeps no data keys."""
        from agentsessions.journal.stores.capabilities import KEY_MANAGEMENT

        done = KEY_MANAGEMENT.need(self.core.store, "keys rotate").rewrap_keys(old, new)
        return Rotation(done.rewrapped, done.already, done.shredded, new.key_id)


def load_key_file(path: str) -> MasterKey:
    """The master key in key file ``path`` (MasterKeyError, exit 26, for a file others may
    read, of the wrong size or not base64; a clear one when ``cryptography`` is missing)."""
    from agentsessions.journal.crypto.cipher import resolve_master

    key = resolve_master(path, {})
    if key is None:  # an empty path
        raise InvalidArgumentError("a key file path is required")
    return key


def new_key_file(path: str | os.PathLike[str]) -> MasterKey:
    """A new random master key written to ``path`` (base64, mode 0600, durably); refuses an
    existing file (InvalidArgumentError): overwriting a key file can lose every session."""
    from agentsessions.journal.crypto.keys import KEYRING_PREFIX, MasterKey, to_keyring
    from agentsessions.journal.format.durable import DEFAULT_FS

    if os.fspath(path).startswith(KEYRING_PREFIX):  # keyring:NAME: kept by the OS keyring
        made = MasterKey.generate()
        name = os.fspath(path)[len(KEYRING_PREFIX) :]
        to_keyring(made, name)
        return MasterKey(made.key, f"keyring:{name}")
    if os.path.lexists(path):
        raise InvalidArgumentError(
            f"{os.fspath(path)} already exists: refusing to overwrite a key file",
            hint="choose another path; a replaced master key cannot read what it wrapped",
        )
    key = MasterKey.generate()
    DEFAULT_FS.create_file(path, base64.b64encode(key.key) + b"\n")  # O_EXCL, mode 0600
    DEFAULT_FS.sync_dir(os.path.dirname(os.path.abspath(path)))
    return MasterKey(key.key, f"key file {os.fspath(path)}")
