"""The bounds a server puts on each request, and the interceptor that counts open streams.

=========================  ==============================  ===================================
bound                      default (``serve`` flag)        beyond it
=========================  ==============================  ===================================
message size, each way     8 MiB (``--max-message-bytes``) RESOURCE_EXHAUSTED (grpc's own
                                                           check, before any handler runs)
page size (ListSessions)   500                             clamped to 500, as the reference
                                                           clamps; negative: INVALID_ARGUMENT
fork count                 1..128                          INVALID_ARGUMENT
open streams per client    64 (``--max-streams-per-client``) RESOURCE_EXHAUSTED, the stream
                                                           refused before its handler runs
=========================  ==============================  ===================================

8 MiB is twice the store's commit limit (4 MiB), so any committed record fits in a reply
with its envelope. A *client* is the token a call authenticated with (one token's calls
share its bound, whichever connections carry them), or, on a listener without auth, the
call's peer address. A stream is a streaming RPC (Exec, Replay, Follow, Connect, ...) from
its first message until it ends for any reason (done, failed, canceled, the peer gone).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from agentsessions.controller.lifecycle import MAX_FORK_CHILDREN
from agentsessions.errors import InvalidArgumentError, ResourceExhaustedError
from agentsessions.journal.stores.store import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from agentsessions.server import status
from agentsessions.server.intercept import NOT_WRAPPED, Handler, guarded

DEFAULT_MAX_MESSAGE_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_STREAMS_PER_CLIENT = 64


@dataclass(frozen=True)
class Limits:
    """A server's bounds (see the module's table)."""

    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    max_streams_per_client: int = DEFAULT_MAX_STREAMS_PER_CLIENT
    max_page_size: int = MAX_PAGE_SIZE
    max_fork_count: int = MAX_FORK_CHILDREN

    def __post_init__(self) -> None:
        for name in ("max_message_bytes", "max_streams_per_client"):
            if getattr(self, name) < 1:
                flag = "--" + name.replace("_", "-")
                raise InvalidArgumentError(f"{flag} must be at least 1, got {getattr(self, name)}")
        if not 1 <= self.max_page_size <= MAX_PAGE_SIZE:
            raise InvalidArgumentError(f"max page size must be 1..{MAX_PAGE_SIZE}")
        if not 1 <= self.max_fork_count <= MAX_FORK_CHILDREN:
            raise InvalidArgumentError(f"max fork count must be 1..{MAX_FORK_CHILDREN}")

    def grpc_options(self) -> list[tuple[str, Any]]:
        """The server's channel options: message sizes both ways."""
        return [
            ("grpc.max_receive_message_length", self.max_message_bytes),
            ("grpc.max_send_message_length", self.max_message_bytes),
        ]

    def page_size(self, page_size: int) -> int:
        """A ListSessions page size: 0 the default, more than the maximum clamped (as the
        reference); a negative one InvalidArgumentError."""
        if page_size < 0:
            raise InvalidArgumentError(
                f"page_size must be >= 0 (0 = {DEFAULT_PAGE_SIZE}), got {page_size}"
            )
        return min(page_size or DEFAULT_PAGE_SIZE, self.max_page_size)

    def fork_count(self, count: int, names: Sequence[str] = ()) -> int:
        """A fork's count if 1..max (and ``names`` empty or one per child), else
        InvalidArgumentError, before anything is written."""
        if not 1 <= count <= self.max_fork_count:
            raise InvalidArgumentError(
                f"fork count must be 1..{self.max_fork_count}, got {count}",
                hint="fork in several requests",
            )
        if names and len(names) != count:
            raise InvalidArgumentError(
                f"child_names has {len(names)} names for {count} children: give none or one each"
            )
        return count


class StreamLimiter(grpc.ServerInterceptor):
    """Refuses a client's streaming call beyond ``limit`` open ones (RESOURCE_EXHAUSTED).

    ``client(context)`` names the client (the auth interceptor's principal, else the peer).
    A slot is taken when the stream's handler starts and given back when the RPC ends for
    any reason (``context.add_callback``), exactly once.
    """

    def __init__(self, limit: int, client: Callable[[grpc.ServicerContext], str]) -> None:
        self.limit = limit
        self._client = client
        self._open: dict[str, int] = {}
        self._mutex = threading.Lock()

    def open_streams(self, client: str) -> int:
        """How many streams ``client`` has open now."""
        with self._mutex:
            return self._open.get(client, 0)

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Handler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler | None:
        if handler_call_details.method in NOT_WRAPPED:  # holds no worker thread
            return continuation(handler_call_details)
        return guarded(continuation(handler_call_details), self._guard)

    def _guard(self, context: grpc.ServicerContext, streaming: bool) -> None:
        if not streaming:
            return
        client = self._client(context)
        with self._mutex:
            held = self._open.get(client, 0)
            if held < self.limit:
                self._open[client] = held + 1
        if held >= self.limit:
            status.abort(
                context,
                ResourceExhaustedError(
                    f"too many open streams for this client ({held} of {self.limit})",
                    hint="end a stream (a follow, an exec) first, or raise "
                    "--max-streams-per-client",
                    limit=self.limit,
                ),
            )
        released = threading.Event()

        def release() -> None:
            with self._mutex:
                if released.is_set():
                    return
                released.set()
                left = self._open[client] - 1
                if left:
                    self._open[client] = left
                else:
                    del self._open[client]

        if not context.add_callback(release):  # the RPC already ended
            release()
