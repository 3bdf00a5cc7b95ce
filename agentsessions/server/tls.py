"""TLS for ``agentsessions serve``, and which listen addresses count as local.

:func:`server_credentials` reads a server certificate chain and key (PEM) and, optionally,
a client CA bundle: with one, every client must present a certificate that CA signed (the
handshake fails otherwise, before any RPC). The files are checked with :mod:`ssl` first, so
a wrong path, a key that does not match its certificate or a file that is not PEM is one
clear InvalidArgumentError (exit 2) naming the flag, not a failure deep inside grpc at bind.

:func:`is_local` says whether a listen address can only be reached from this machine:
``unix://`` sockets, and the loopback hosts ``127.0.0.0/8``, ``::1`` and ``localhost``
(taken by name, never resolved: a hosts file that maps it elsewhere is the operator's).
"""

from __future__ import annotations

import ipaddress
import os
import ssl
from pathlib import Path

import grpc

from agentsessions.errors import InvalidArgumentError

UNIX_PREFIXES = ("unix://", "unix:")


def listen_host(listen: str) -> str | None:
    """The host part of ``HOST:PORT`` / ``[V6]:PORT`` (None for a unix socket)."""
    if listen.startswith(UNIX_PREFIXES):
        return None
    if listen.startswith("["):
        host, sep, _ = listen[1:].partition("]")
        if not sep:
            raise InvalidArgumentError(f"invalid listen address {listen!r}: unclosed '['")
        return host
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        raise InvalidArgumentError(
            f"invalid listen address {listen!r}: expected HOST:PORT or unix:///PATH",
            hint="for example 127.0.0.1:8080",
            param="listen",
        )
    return host


def is_local(listen: str) -> bool:
    """True if ``listen`` is a unix socket or a loopback address."""
    host = listen_host(listen)
    if host is None:
        return True
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name other than localhost: it may resolve anywhere
        return False


def _read(path: str | os.PathLike[str], flag: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InvalidArgumentError(
            f"{flag} {os.fspath(path)}: {exc.strerror or exc}", hint=f"check the {flag} path"
        ) from exc


def check_files(
    tls_cert: str | os.PathLike[str],
    tls_key: str | os.PathLike[str],
    client_ca: str | os.PathLike[str] | None = None,
) -> None:
    """Refuse, with the flag's name, a certificate, key or CA file TLS could not use."""
    for path, flag in (
        (tls_cert, "--tls-cert"),
        (tls_key, "--tls-key"),
        (client_ca, "--client-ca"),
    ):
        if path is not None:
            _read(path, flag)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(os.fspath(tls_cert), os.fspath(tls_key))
    except (ssl.SSLError, ValueError) as exc:
        raise InvalidArgumentError(
            f"the TLS certificate or key cannot be used: {exc}",
            hint="both PEM; the key must be the certificate's (and not encrypted)",
        ) from exc
    if client_ca is not None:
        try:
            context.load_verify_locations(cafile=os.fspath(client_ca))
        except (ssl.SSLError, ValueError) as exc:
            raise InvalidArgumentError(
                f"the client CA bundle {os.fspath(client_ca)} cannot be used: {exc}",
                hint="a PEM bundle of the CA certificates that sign client certificates",
            ) from exc


def server_credentials(
    *,
    tls_cert: str | os.PathLike[str] | None,
    tls_key: str | os.PathLike[str] | None,
    client_ca: str | os.PathLike[str] | None = None,
) -> grpc.ServerCredentials | None:
    """TLS server credentials (None without a certificate: a plaintext port).

    With ``client_ca`` every client must present a certificate signed by it.
    """
    if tls_cert is None and tls_key is None:
        if client_ca is not None:
            raise InvalidArgumentError(
                "requiring client certificates needs TLS",
                hint="give a TLS certificate and key too",
                param="client_ca",
            )
        return None
    if tls_cert is None or tls_key is None:
        raise InvalidArgumentError(
            "a TLS certificate and its key go together", hint="give both, or neither", param="tls"
        )
    check_files(tls_cert, tls_key, client_ca)
    ca = _read(client_ca, "--client-ca") if client_ca is not None else None
    return grpc.ssl_server_credentials(
        [(_read(tls_key, "--tls-key"), _read(tls_cert, "--tls-cert"))],
        root_certificates=ca,
        require_client_auth=ca is not None,
    )
