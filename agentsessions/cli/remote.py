"""The CLI's ``--server``: the client of a daemon, in place of the local engine.

Imported only when ``--server`` (or ``$AGENTSESSIONS_SERVER``) is given, so a local command
never imports grpc. Every command then calls the same :class:`Sessions` methods over the
wire, with the same output and exit codes: the client raises our own exception classes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentsessions.client.remote import RemoteSessions


@contextmanager
def dial_server(server: str, token: str, files: tuple[str, str, str]) -> Iterator[RemoteSessions]:
    """The client of ``server`` (``token``; the TLS ``files`` ca, cert, key), closed when
    done."""
    from agentsessions.cli.serveropts import quiet_grpc

    quiet_grpc()
    from agentsessions.client import TLS, dial

    ca, cert, key = files
    tls = None
    if any(files):
        tls = TLS(
            ca=Path(ca) if ca else None,
            cert=Path(cert) if cert else None,
            key=Path(key) if key else None,
        )
    with dial(server, token=token or None, tls=tls) as client:
        yield client
