"""The HarnessRegistry service (spec digest 1.4) over a :class:`HarnessBook`.

The rules (outcomes, ALREADY_EXISTS, FAILED_PRECONDITION for a static name or a placement
this host cannot serve, paging) are the book's (``agentsessions/sessions/harnessbook.py``);
this module only maps messages and errors. A registration crosses as its proto3-JSON dict,
so the ``spec_digest`` of a stored spec is the digest of what the caller sent.

``GetHarness(observe=true)`` also asks a remote harness to describe itself: its descriptor
in ``observed``, or why it could not in ``observe_error``; ``unservable_reason`` says why
the host would refuse to place a session on it (it is not STATELESS_REPLAY, or it is not
the ``descriptor_id`` the spec names).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import grpc
from google.protobuf import json_format

from agentsessions.errors import AgentSessionsError, InvalidArgumentError
from agentsessions.server import harnesswire as wire
from agentsessions.server.gen import harness_registry_pb2 as pb
from agentsessions.server.gen import harness_registry_pb2_grpc as pb_grpc
from agentsessions.server.status import abort
from agentsessions.sessions.harnessbook import STATELESS, HarnessBook

R = TypeVar("R")


def registration_to_proto(reg: dict[str, Any]) -> pb.HarnessRegistration:
    """A stored registration dict as the message."""
    return json_format.ParseDict(reg, pb.HarnessRegistration())


def spec_dict(spec: pb.HarnessSpec) -> dict[str, Any]:
    """The proto3-JSON of a HarnessSpec (proto names, enum names, unpopulated omitted)."""
    return json_format.MessageToDict(spec, preserving_proto_field_name=True)


class HarnessRegistryService(pb_grpc.HarnessRegistryServicer):
    """RegisterHarness, GetHarness, ListHarnesses and RetireHarness."""

    def __init__(self, book: HarnessBook) -> None:
        self.book = book

    def _call(self, context: grpc.ServicerContext, fn: Callable[[], R]) -> R:
        try:
            return fn()
        except AgentSessionsError as exc:
            abort(context, exc)
            raise  # abort raised already; this keeps the type checker honest

    def RegisterHarness(
        self, request: pb.RegisterHarnessRequest, context: grpc.ServicerContext
    ) -> pb.RegisterHarnessResponse:
        def run() -> pb.RegisterHarnessResponse:
            if not request.HasField("spec"):
                raise InvalidArgumentError("RegisterHarness needs a spec")
            reg, outcome = self.book.register(request.name, spec_dict(request.spec))
            return pb.RegisterHarnessResponse(harness=registration_to_proto(reg), outcome=outcome)

        return self._call(context, run)

    def GetHarness(
        self, request: pb.GetHarnessRequest, context: grpc.ServicerContext
    ) -> pb.HarnessRegistration:
        def run() -> pb.HarnessRegistration:
            msg = registration_to_proto(self.book.get(request.name))
            if request.observe:
                observe(msg)
            return msg

        return self._call(context, run)

    def ListHarnesses(
        self, request: pb.ListHarnessesRequest, context: grpc.ServicerContext
    ) -> pb.ListHarnessesResponse:
        def run() -> pb.ListHarnessesResponse:
            regs, token = self.book.list(
                request.page_size, request.page_token, request.include_retired
            )
            return pb.ListHarnessesResponse(
                harnesses=[registration_to_proto(r) for r in regs], next_page_token=token
            )

        return self._call(context, run)

    def RetireHarness(
        self, request: pb.RetireHarnessRequest, context: grpc.ServicerContext
    ) -> pb.HarnessRegistration:
        return self._call(
            context,
            lambda: registration_to_proto(self.book.retire(request.name, request.reason)),
        )


def observe(msg: pb.HarnessRegistration) -> None:
    """Fill ``observed`` (or ``observe_error``) and ``unservable_reason`` of a remote one."""
    from agentsessions.server.harnessclient import describe

    address = msg.spec.remote.address
    if not address:
        return
    try:
        descriptor = describe(address, timeout=5.0)
    except AgentSessionsError as exc:
        msg.observe_error = str(exc)
        return
    msg.observed.CopyFrom(wire.descriptor_to_proto(descriptor))
    if descriptor.capabilities.resumability != STATELESS:
        msg.unservable_reason = f"the harness is {descriptor.capabilities.resumability}"
    elif msg.spec.descriptor_id and msg.spec.descriptor_id != descriptor.id:
        msg.unservable_reason = (
            f"the harness describes itself as {descriptor.id!r}, not {msg.spec.descriptor_id!r}"
        )


def add_to_server(server: grpc.Server, book: HarnessBook) -> HarnessRegistryService:
    """Register the HarnessRegistry service on ``server`` (the ``extra_services`` seam)."""
    servicer = HarnessRegistryService(book)
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
