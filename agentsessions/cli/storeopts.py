"""The global options that choose where sessions live (``--store``, ``--allow-unsynced``)
and the master key they are encrypted with (``--key-file``).

The store is a deployment choice: the same commands run on the file store under
``--home`` or on the store a URL names (``agentsessions.sessions.storeurl``)."""

from __future__ import annotations

from typing import Annotated

import typer

StoreOpt = Annotated[
    str,
    typer.Option(
        "--store",
        envvar="AGENTSESSIONS_STORE",
        metavar="URL",
        help="Where sessions live: nats://HOST:PORT?monitor=URL[&connect_timeout=SECONDS, "
        "default 2] (JetStream, see docs/JETSTREAM.md); default: $AGENTSESSIONS_STORE, else "
        "[store] url in the config file ($AGENTSESSIONS_CONFIG, else HOME/config.toml), else "
        "the file store under --home.",
        show_envvar=False,
    ),
]
AllowUnsyncedOpt = Annotated[
    bool,
    typer.Option(
        "--allow-unsynced",
        help="Accept a --store server that cannot be shown to fsync before it acknowledges.",
    ),
]
KeyFileOpt = Annotated[
    str,
    typer.Option(
        "--key-file",
        metavar="FILE",
        help="The master key of encryption at rest (base64 of 32 bytes, mode 0600): new "
        "sessions are encrypted, encrypted ones read; default: $AGENTSESSIONS_KEY_FILE, "
        "else $AGENTSESSIONS_MASTER_KEY (the key itself), else [keys] key_file in the config "
        "file, else none. keyring:NAME: from the OS keyring.",
    ),
]


DecryptOpt = Annotated[
    bool,
    typer.Option(
        "--decrypt",
        help="An encrypted session: write a portable plaintext export (needs the master key).",
    ),
]
CiphertextOpt = Annotated[
    bool,
    typer.Option(
        "--ciphertext",
        help="An encrypted session: ship its sealed records and wrapped key (no master key "
        "needed; an import needs the same master key, verify FILE checks it without).",
    ),
]


def export_choice(server: str, decrypt: bool, ciphertext: bool) -> dict[str, str]:
    """The engine's ``encryption`` argument for ``export`` ({} when neither flag is given);
    both at once is a usage error, and either is local only (exit 2)."""
    from agentsessions.cli.serveropts import require_local
    from agentsessions.errors import InvalidArgumentError

    if decrypt and ciphertext:
        raise InvalidArgumentError("--decrypt and --ciphertext exclude each other")
    if not (decrypt or ciphertext):
        return {}
    require_local(server, "export --decrypt" if decrypt else "export --ciphertext")
    return {"encryption": "decrypt" if decrypt else "ciphertext"}
