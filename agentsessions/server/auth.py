"""Who is calling: the bearer-token interceptor, and :func:`server_security`, the one call
``agentsessions serve`` makes to get its credentials, interceptors and scope.

Every call must carry ``authorization: Bearer <token>`` metadata naming a live token of the
home (:mod:`agentsessions.sessions.tokens`); anything else is refused UNAUTHENTICATED before the
handler runs (no token, a malformed, unknown, wrong, revoked or expired one), with one clear message
and a hint naming ``token create``; the health and reflection services
(:data:`PUBLIC_PREFIXES`) are the exception. The token's
:class:`~agentsessions.sessions.tokens.Principal` is set
in a context variable of the call's own context, which grpc runs the handler in too (unary or
streaming, :mod:`agentsessions.wire.intercept`): :func:`current_principal` reads it, and the scope
(:mod:`.scoped`) binds the engine to it. The method's handler is passed on as it is: nothing
is built per call.

The token is checked in ``intercept_service``, on grpc's serving thread (:mod:`.admission`
says why that thread): a call with a bad token is refused there, without a worker, and the
interceptors after this one (admission, which counts per token) see the principal too. The
check is a ``stat`` of the token file and one SHA-256, cheap enough for that thread.

The only way to serve without tokens is an explicit ``no_auth`` on a listener only this
machine can reach (a unix socket or a loopback address, :func:`.tls.is_local`); a token on a
non-local listener needs TLS, or it would cross the network in the clear.
"""

from __future__ import annotations

import contextvars
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import grpc

from agentsessions.errors import AgentSessionsError, InvalidArgumentError, UnauthenticatedError
from agentsessions.server import tls
from agentsessions.server.admission import Admission, refusal
from agentsessions.server.scoped import Scope
from agentsessions.sessions.tokens import Principal, TokenStore
from agentsessions.wire.bounds import Limits
from agentsessions.wire.intercept import Handler, note

if TYPE_CHECKING:
    from agentsessions.server.modelpolicy import ModelPolicy
    from agentsessions.sessions.api import Sessions
    from agentsessions.tools.offered import OfferedTools

LOG = logging.getLogger("agentsessions.server")
AUTH_KEY = "authorization"
SCHEME = "bearer"
LOCAL_OPERATOR = Principal(name="", projects=None)
PUBLIC_PREFIXES = (
    "/grpc.health.v1.Health/",
    "/grpc.reflection.v1.ServerReflection/",
    "/grpc.reflection.v1alpha.ServerReflection/",
)
"""Services served without a token: health (a load balancer has none) and reflection (it
tells only the schema, which is public: proto/ in the repository). Neither reaches the
engine, and a call of theirs has no principal, so the scope would refuse it anything."""
"""The caller on a listener started without auth: every project, its own actor names."""

_PRINCIPAL: contextvars.ContextVar[Principal | None] = contextvars.ContextVar(
    "agentsessions_principal", default=None
)


def current_principal() -> Principal | None:
    """The principal of the call this thread is handling (None outside an authenticated
    call: the scope then refuses everything)."""
    return _PRINCIPAL.get()


def bearer_token(metadata: Sequence[tuple[str, str | bytes]] | None) -> str:
    """The token of an ``authorization: Bearer <token>`` entry; UnauthenticatedError if
    there is none, or more than one, or it is not a Bearer credential."""
    values = [v for k, v in (metadata or ()) if k.lower() == AUTH_KEY]
    if not values:
        raise UnauthenticatedError(
            "no bearer token: send metadata 'authorization: Bearer <token>'",
            hint="create one with: agentsessions token create --project PROJECT",
        )
    if len(values) > 1:
        raise UnauthenticatedError("more than one authorization entry: send exactly one")
    value = values[0]
    text = value.decode("ascii", "replace") if isinstance(value, bytes) else value
    scheme, _, token = text.strip().partition(" ")
    if scheme.lower() != SCHEME or not token.strip():
        raise UnauthenticatedError("authorization must be 'Bearer <token>'")
    return token.strip()


class TokenAuth(grpc.ServerInterceptor):
    """Authenticates every call against ``tokens``; sets its principal for the handler."""

    def __init__(self, tokens: TokenStore) -> None:
        self.tokens = tokens

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Handler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler | None:
        if handler_call_details.method.startswith(PUBLIC_PREFIXES):
            return continuation(handler_call_details)  # no principal: the scope refuses all
        try:
            info = self.tokens.authenticate(bearer_token(handler_call_details.invocation_metadata))
        except UnauthenticatedError as exc:
            return refusal(exc)
        except AgentSessionsError as exc:  # a damaged or unreadable token file
            LOG.error("cannot check bearer tokens: %s", exc.message)
            return refusal(UnauthenticatedError("the server cannot check tokens (see its log)"))
        # in the call's own context (grpc's, per call): the interceptors after this one and
        # the handler see it, the next call does not
        _PRINCIPAL.set(Principal.of(info))
        note(token_id=info.id, principal=info.principal)
        return continuation(handler_call_details)


class LocalOperator(grpc.ServerInterceptor):
    """On a listener without auth: every call acts as :data:`LOCAL_OPERATOR`."""

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Handler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler | None:
        _PRINCIPAL.set(LOCAL_OPERATOR)  # in the call's own context, as TokenAuth's
        return continuation(handler_call_details)


def server_security(
    home: str | os.PathLike[str],
    *,
    listen: str,
    engine: Sessions,
    tls_cert: str | os.PathLike[str] | None = None,
    tls_key: str | os.PathLike[str] | None = None,
    client_ca: str | os.PathLike[str] | None = None,
    no_auth: bool = False,
    limits: Limits | None = None,
    offered: OfferedTools | None = None,
    models: ModelPolicy | None = None,
) -> tuple[grpc.ServerCredentials | None, list[grpc.ServerInterceptor], Scope]:
    """What ``build_server`` needs to serve ``engine`` safely on ``listen``.

    Returns the TLS credentials (None: a plaintext port), the interceptors (the token check,
    or the local operator with ``no_auth``, then admission: the per-token and server
    bounds) and the scope that binds ``engine`` to each call's principal (projects, actor,
    request bounds). Refuses
    (InvalidArgumentError, exit 2) ``no_auth`` on a listener other machines can reach, and
    tokens over plaintext there; the TLS files are checked here, before anything listens.
    ``offered``: the tools a token holder's workload may select (``serve --tools``).
    ``models``: what a token holder may name as a model (:mod:`.modelpolicy`; None: the
    offline models only).
    """
    limits = limits or Limits()
    credentials = tls.server_credentials(tls_cert=tls_cert, tls_key=tls_key, client_ca=client_ca)
    local = tls.is_local(listen)
    first: grpc.ServerInterceptor
    if no_auth:
        if not local:
            raise InvalidArgumentError(
                f"serving without tokens on {listen}: only a unix socket or a loopback "
                "address (127.0.0.0/8, ::1, localhost) may be served without tokens",
                hint="listen on 127.0.0.1:PORT, or serve with tokens: agentsessions token create",
                param="no_auth",
            )
        first = LocalOperator()
    else:
        if credentials is None and not local:
            raise InvalidArgumentError(
                f"bearer tokens on {listen} without TLS would cross the network in plaintext",
                hint="give a TLS certificate and key, or listen on a loopback address",
                param="plaintext_tokens",
            )
        first = TokenAuth(TokenStore(Path(home)))
    interceptors: list[grpc.ServerInterceptor] = [
        first,
        Admission(limits, current_principal),
    ]
    return (
        credentials,
        interceptors,
        Scope(engine, current_principal, limits, offered=offered, models=models),
    )
