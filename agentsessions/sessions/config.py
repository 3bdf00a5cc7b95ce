"""The deployment's configuration file: where sessions live and the master key, by file.

The store is a deployment choice, made once for a host rather than on every command line:
``$AGENTSESSIONS_CONFIG``, else ``<home>/config.toml``, may say

    [store]
    url = "nats://10.0.0.5:4222?monitor=http://10.0.0.5:8222"
    allow_unsynced = false

    [keys]
    key_file = "/etc/agentsessions/master.key"

    [models.fast]
    spec = "openai:gpt-4o-mini,base_url=http://127.0.0.1:4000/v1"

Each ``[models.NAME]`` table adds NAME to the operator's model catalog
(:mod:`agentsessions.models.catalog`): ``--model fast`` then means its ``spec``, for the
CLI and for ``serve`` (whose ``--model NAME=SPEC`` wins over an entry of the same name).
Each value is the lowest-priority source: ``--store`` / ``AGENTSESSIONS_STORE``,
``--allow-unsynced``, and ``--key-file`` / ``AGENTSESSIONS_KEY_FILE`` /
``AGENTSESSIONS_MASTER_KEY`` win over it. A relative ``key_file`` is relative to the
config file's directory. An unknown table or key, a value of the wrong type or a file that
is not TOML is refused (exit 2) rather than ignored: a typo must not quietly put sessions
in the wrong store or leave them unencrypted.

No file costs one ``stat``: ``tomllib`` is imported only when the file exists.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from agentsessions.errors import InvalidArgumentError

if TYPE_CHECKING:
    from agentsessions.journal.crypto.keys import MasterKey

CONFIG_ENV = "AGENTSESSIONS_CONFIG"
CONFIG_NAME = "config.toml"
_KNOWN: dict[str, dict[str, type]] = {
    "store": {"url": str, "allow_unsynced": bool},
    "keys": {"key_file": str},
}
_MODELS = "models"  # [models.NAME] tables, each with one key: spec


class HomeConfig(NamedTuple):
    """What a configuration file says (empty values: it says nothing)."""

    path: Path | None = None
    store_url: str = ""
    allow_unsynced: bool = False
    key_file: str = ""
    models: Mapping[str, str] = {}  # a NamedTuple default: shared, never mutated
    """The model catalog, NAME -> SPEC (``[models.NAME]`` tables)."""


def config_path(home: Path, env: Mapping[str, str] | None = None) -> tuple[Path, bool]:
    """The configuration file to read and whether it was named explicitly (then it must
    exist): ``$AGENTSESSIONS_CONFIG``, else ``<home>/config.toml``."""
    env = os.environ if env is None else env
    named = env.get(CONFIG_ENV, "")
    if named:
        return Path(named).expanduser(), True
    return home / CONFIG_NAME, False


def load_config(home: Path, env: Mapping[str, str] | None = None) -> HomeConfig:
    """The configuration for ``home``; an empty HomeConfig when there is no file."""
    path, explicit = config_path(home, env)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if explicit:
            raise InvalidArgumentError(
                f"{CONFIG_ENV} names {str(path)!r}, which does not exist",
                hint=f"create it, or unset {CONFIG_ENV}",
            ) from None
        return HomeConfig()
    except OSError as exc:
        raise InvalidArgumentError(
            f"cannot read config file {str(path)!r}: {exc.strerror or exc}"
        ) from None
    return parse_config(data, path)


def parse_config(data: bytes, path: Path) -> HomeConfig:
    """Parse the TOML bytes of the config file at ``path`` (named in every error)."""
    import tomllib

    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidArgumentError(f"config file {str(path)!r} is not valid TOML: {exc}") from None
    values: dict[str, Any] = {}
    models: dict[str, str] = {}
    for table, body in doc.items():
        if table == _MODELS:
            models = _models(body, path)
            continue
        keys = _KNOWN.get(table)
        if keys is None or not isinstance(body, dict):
            raise InvalidArgumentError(
                f"config file {str(path)!r}: unknown table [{table}]",
                hint="known tables: " + ", ".join(f"[{t}]" for t in _KNOWN) + ", [models.NAME]",
            )
        for key, value in body.items():
            want = keys.get(key)
            if want is None:
                raise InvalidArgumentError(
                    f"config file {str(path)!r}: unknown key {key!r} in [{table}]",
                    hint=f"[{table}] takes: " + ", ".join(keys),
                )
            if type(value) is not want:
                raise InvalidArgumentError(
                    f"config file {str(path)!r}: [{table}] {key} must be a {want.__name__}, "
                    f"not {type(value).__name__}"
                )
            values[f"{table}.{key}"] = value
    key_file = values.get("keys.key_file", "")
    if key_file:
        key_file = os.fspath((path.parent / Path(key_file).expanduser()).resolve())
    return HomeConfig(
        path=path,
        store_url=values.get("store.url", ""),
        allow_unsynced=values.get("store.allow_unsynced", False),
        key_file=key_file,
        models=models,
    )


def _models(body: object, path: Path) -> dict[str, str]:
    """The ``[models.NAME]`` tables as NAME -> SPEC, each NAME and SPEC checked."""
    from agentsessions.models.catalog import ModelCatalog

    where = f"config file {str(path)!r}"
    if not isinstance(body, dict):
        raise InvalidArgumentError(f"{where}: models must be tables: [models.NAME]")
    out: dict[str, str] = {}
    for name, table in body.items():
        if not isinstance(table, dict) or set(table) != {"spec"}:
            raise InvalidArgumentError(
                f"{where}: [models.{name}] must have exactly one key, spec",
                hint=f'[models.{name}]\nspec = "openai:gpt-4o-mini"',
            )
        if type(table["spec"]) is not str:
            raise InvalidArgumentError(f"{where}: [models.{name}] spec must be a str")
        out[name] = table["spec"]
    try:
        return dict(ModelCatalog(out))
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"{where}: {exc.message}", hint=exc.hint) from None


class Choices(NamedTuple):
    """What an engine opens with (:func:`resolve_choices`)."""

    url: str
    allow_unsynced: bool
    master: MasterKey | None
    models: Mapping[str, str]


def resolve_choices(
    home: Path,
    store_url: str | None,
    allow_unsynced: bool,
    key_file: str | None,
    models: Mapping[str, str] | None = None,
) -> Choices:
    """The store URL, ``allow_unsynced``, master key and model catalog an engine opens
    with: each as the caller (flags) gave it, else from the environment, else from the
    configuration file (the catalog: the file's entries, then ``models`` over them)."""
    from agentsessions.journal.crypto.configured import resolve_master
    from agentsessions.sessions.storeurl import resolve_store_url

    config = load_config(home)
    url = resolve_store_url(store_url) or config.store_url
    master = resolve_master(key_file) or (
        resolve_master(config.key_file) if config.key_file else None
    )
    catalog = {**config.models, **(models or {})}
    return Choices(url, allow_unsynced or config.allow_unsynced, master, catalog)
