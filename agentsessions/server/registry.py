"""The HarnessRegistry service (spec digest 1.4) over a :class:`HarnessBook`.

The rules (outcomes, ALREADY_EXISTS, FAILED_PRECONDITION for a static name or a placement
this host cannot serve, paging, names per project) are the book's
(``agentsessions/sessions/harnessbook.py``); this module maps messages and errors and
applies the caller's scope. A registration crosses as its proto3-JSON dict, so the
``spec_digest`` of a stored spec is the digest of what the caller sent.

Scope: every call acts in one project, the request's ``project`` (an addition, 1000) or,
naming none, the token's first (the operator's: ``default``), by the sessions' rule
(:func:`~agentsessions.server.scoped.choose_project`: a project the token does not cover is
PERMISSION_DENIED). A token sees, registers and retires only its projects' harnesses:
another project's registration is answered exactly as a name nobody registered
(NOT_FOUND, the same text), and ListHarnesses lists the static harnesses and the project's
own. Registering an address other than a loopback port (off this machine, which the
server would dial, or a unix socket, a path on its disk) needs an admin token
(``token create --admin``; PERMISSION_DENIED otherwise); the operator of a listener
without auth is admin. A call without a principal (no interceptor set one) is refused
UNAUTHENTICATED: the service fails closed, as the sessions' scope does.

``GetHarness(observe=true)`` also asks a remote harness to describe itself: its descriptor
in ``observed``, or why it could not in ``observe_error``; ``unservable_reason`` says why
the host would refuse to place a session on it (it is not STATELESS_REPLAY, or it is not
the ``descriptor_id`` the spec names). Only a registration the caller sees is dialled.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import grpc
from google.protobuf import json_format

from agentsessions.errors import (
    AgentSessionsError,
    InvalidArgumentError,
    PermissionDeniedError,
    UnauthenticatedError,
)
from agentsessions.server.auth import current_principal
from agentsessions.server.scoped import DEFAULT_PROJECT, choose_project
from agentsessions.server.tls import is_local
from agentsessions.sessions.harnessbook import STATELESS, HarnessBook, check_address
from agentsessions.sessions.tokens import Principal
from agentsessions.wire import harnesswire as wire
from agentsessions.wire.gen import harness_registry_pb2 as pb
from agentsessions.wire.gen import harness_registry_pb2_grpc as pb_grpc
from agentsessions.wire.status import abort

R = TypeVar("R")
_QUOTE = 200  # at most this much of a caller's text is quoted back


def registration_to_proto(reg: dict[str, Any]) -> pb.HarnessRegistration:
    """A stored registration dict as the message."""
    return json_format.ParseDict(reg, pb.HarnessRegistration())


def spec_dict(spec: pb.HarnessSpec) -> dict[str, Any]:
    """The proto3-JSON of a HarnessSpec (proto names, enum names, unpopulated omitted)."""
    return json_format.MessageToDict(spec, preserving_proto_field_name=True)


def check_admin(principal: Principal, address: str) -> None:
    """Refuse (PermissionDeniedError) a non-admin registering ``address`` anywhere but a
    loopback port: the server dials what is registered, so only an admin may point it off
    this machine, or at a unix socket (a path on the server's disk, which a caller must never
    name)."""
    check_address(address)
    if principal.is_admin or (is_local(address) and not address.startswith("unix:")):
        return
    shown = address if len(address) <= _QUOTE else address[:_QUOTE] + "..."
    raise PermissionDeniedError(
        f"{principal.name or 'this token'} may not register a harness at {shown!r}: an "
        "address other than a loopback port (off the server's machine, or a unix socket) "
        "needs an admin token (agentsessions token create --admin)",
        hint="the operator creates one: agentsessions token create --project P --admin",
    )


class HarnessRegistryService(pb_grpc.HarnessRegistryServicer):
    """RegisterHarness, GetHarness, ListHarnesses and RetireHarness, scoped per call."""

    def __init__(
        self, book: HarnessBook, principal: Callable[[], Principal | None] = current_principal
    ) -> None:
        self.book = book
        self._principal = principal

    def _call(self, context: grpc.ServicerContext, fn: Callable[[], R]) -> R:
        try:
            return fn()
        except AgentSessionsError as exc:
            abort(context, exc)
            raise  # abort raised already; this keeps the type checker honest

    def _caller(self, project: str) -> tuple[Principal, str]:
        """The call's principal and the project it acts in (UNAUTHENTICATED without one)."""
        principal = self._principal()
        if principal is None:
            raise UnauthenticatedError("no authenticated principal for this call")
        return principal, choose_project(principal, project or DEFAULT_PROJECT)

    def RegisterHarness(
        self, request: pb.RegisterHarnessRequest, context: grpc.ServicerContext
    ) -> pb.RegisterHarnessResponse:
        def run() -> pb.RegisterHarnessResponse:
            principal, project = self._caller(request.project)
            if not request.HasField("spec"):
                raise InvalidArgumentError("RegisterHarness needs a spec")
            if request.spec.HasField("remote"):
                check_admin(principal, request.spec.remote.address)
            spec = spec_dict(request.spec)
            reg, outcome = self.book.register(request.name, spec, project)
            return pb.RegisterHarnessResponse(harness=registration_to_proto(reg), outcome=outcome)

        return self._call(context, run)

    def GetHarness(
        self, request: pb.GetHarnessRequest, context: grpc.ServicerContext
    ) -> pb.HarnessRegistration:
        def run() -> pb.HarnessRegistration:
            principal, project = self._caller(request.project)
            msg = registration_to_proto(self.book.get(request.name, project))
            if request.observe:
                observe(msg, detailed=principal.is_admin)
            return msg

        return self._call(context, run)

    def ListHarnesses(
        self, request: pb.ListHarnessesRequest, context: grpc.ServicerContext
    ) -> pb.ListHarnessesResponse:
        def run() -> pb.ListHarnessesResponse:
            _, project = self._caller(request.project)
            regs, token = self.book.list(
                request.page_size, request.page_token, request.include_retired, project
            )
            return pb.ListHarnessesResponse(
                harnesses=[registration_to_proto(r) for r in regs], next_page_token=token
            )

        return self._call(context, run)

    def RetireHarness(
        self, request: pb.RetireHarnessRequest, context: grpc.ServicerContext
    ) -> pb.HarnessRegistration:
        def run() -> pb.HarnessRegistration:
            _, project = self._caller(request.project)
            return registration_to_proto(self.book.retire(request.name, request.reason, project))

        return self._call(context, run)


def observe(msg: pb.HarnessRegistration, *, detailed: bool = True) -> None:
    """Fill ``observed`` (or ``observe_error``) and ``unservable_reason`` of a remote one.
    Without ``detailed`` (a caller who is not admin) the error says only that no harness
    answered: the reason (refused, reset, not a harness) would make a registration a probe
    of the server's loopback ports."""
    from agentsessions.wire.harnessclient import describe

    address = msg.spec.remote.address
    if not address:
        return
    try:
        descriptor = describe(address, timeout=5.0)
    except AgentSessionsError as exc:
        msg.observe_error = str(exc) if detailed else f"no harness answered at {address}"
        return
    msg.observed.CopyFrom(wire.descriptor_to_proto(descriptor))
    if descriptor.capabilities.resumability != STATELESS:
        msg.unservable_reason = f"the harness is {descriptor.capabilities.resumability}"
    elif msg.spec.descriptor_id and msg.spec.descriptor_id != descriptor.id:
        msg.unservable_reason = (
            f"the harness describes itself as {descriptor.id!r}, not {msg.spec.descriptor_id!r}"
        )


def add_to_server(
    server: grpc.Server,
    book: HarnessBook,
    principal: Callable[[], Principal | None] = current_principal,
) -> HarnessRegistryService:
    """Register the HarnessRegistry service on ``server`` (the ``extra_services`` seam);
    ``principal`` says who each call acts as (the auth interceptors' by default)."""
    servicer = HarnessRegistryService(book, principal)
    pb_grpc.add_HarnessRegistryServicer_to_server(servicer, server)  # type: ignore[no-untyped-call]
    return servicer


def harness_services(
    engine: Any, harness_pairs: Sequence[str] = ()
) -> list[Callable[[grpc.Server], None]]:
    """What ``agentsessions serve`` passes as ``extra_services``: the HarnessRegistry over
    ``engine``'s store, after making each ``--harness NAME=ADDRESS`` pair a static remote
    harness (InvalidArgumentError for a malformed pair, before anything listens)."""
    from agentsessions.sessions.harnessbook import records_for, static_remotes

    static_remotes(harness_pairs)
    book = HarnessBook(records_for(engine.store))

    def add(server: grpc.Server) -> None:
        add_to_server(server, book)

    return [add]
