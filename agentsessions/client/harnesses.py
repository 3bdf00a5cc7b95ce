"""The HarnessRegistry over the wire: :class:`~agentsessions.sessions.harnessbook.HarnessBook`'s
four methods, answered by a server's ``agentsessions.v1.HarnessRegistry``.

``agentsessions --server ADDR harness register|list|retire`` use it in place of the home's
book. A registration comes back as the same proto3-JSON dict the book keeps (proto field
names, enum names), so the CLI prints one the same way whichever answered; the server's
refusals arrive as our exceptions (the client's trailers), so the exit codes match too.
What the server lets a caller see is its scope: the token's projects (docs/WIRE.md).
"""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from agentsessions.client.remote import RemoteSessions
from agentsessions.wire.gen import harness_registry_pb2 as pb
from agentsessions.wire.gen import harness_registry_pb2_grpc as pb_grpc

Registration = dict[str, Any]


def _dict(msg: Message) -> Registration:
    return json_format.MessageToDict(msg, preserving_proto_field_name=True)


class RemoteHarnessBook:
    """The registry of the server ``client`` is connected to, with ``client``'s token."""

    def __init__(self, client: RemoteSessions) -> None:
        self._client = client
        self._stub = pb_grpc.HarnessRegistryStub(client.channel)  # type: ignore[no-untyped-call]

    def register(
        self, name: str, spec: dict[str, Any], project: str = ""
    ) -> tuple[Registration, str]:
        """RegisterHarness: (registration, outcome name)."""
        request = pb.RegisterHarnessRequest(
            name=name, spec=json_format.ParseDict(spec, pb.HarnessSpec()), project=project
        )
        reply = self._client.unary(self._stub.RegisterHarness, request)
        return _dict(reply.harness), pb.RegisterOutcome.Name(reply.outcome)

    def get(self, name: str, project: str = "", observe: bool = False) -> Registration:
        """GetHarness (``observe``: the server asks the harness to describe itself)."""
        request = pb.GetHarnessRequest(name=name, project=project, observe=observe)
        return _dict(self._client.unary(self._stub.GetHarness, request))

    def list(
        self,
        page_size: int = 0,
        page_token: str = "",
        include_retired: bool = False,
        project: str = "",
    ) -> tuple[list[Registration], str]:
        """ListHarnesses: one page and the next page's token ("" at the end)."""
        request = pb.ListHarnessesRequest(
            page_size=page_size,
            page_token=page_token,
            include_retired=include_retired,
            project=project,
        )
        reply = self._client.unary(self._stub.ListHarnesses, request)
        return [_dict(h) for h in reply.harnesses], reply.next_page_token

    def retire(self, name: str, reason: str = "", project: str = "") -> Registration:
        """RetireHarness."""
        request = pb.RetireHarnessRequest(name=name, reason=reason, project=project)
        return _dict(self._client.unary(self._stub.RetireHarness, request))
