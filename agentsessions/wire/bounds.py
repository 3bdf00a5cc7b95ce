"""The bounds a server puts on each request and each caller (docs/OPERATIONS.md).

==========================  ====================================  ================================
bound                       default (``serve`` flag)              beyond it
==========================  ====================================  ================================
message size, each way      8 MiB (``--max-message-bytes``)       RESOURCE_EXHAUSTED (grpc's own
                                                                  check, before any handler runs)
page size (ListSessions)    500                                   clamped to 500, as the reference
                                                                  clamps; negative: INVALID_ARGUMENT
fork count                  1..128                                INVALID_ARGUMENT
requests per token          200 a second, bursts of 400           RESOURCE_EXHAUSTED
                            (``--max-rps-per-token``)
open streams per token      16 (``--max-streams-per-token``;      RESOURCE_EXHAUSTED
                            ``--max-streams-per-client``: alias)
turns in flight per token   8 (``--max-turns-per-token``)         RESOURCE_EXHAUSTED
streams and turns, server   64 (``--max-streams``), each on a     RESOURCE_EXHAUSTED
                            worker of its own
unary calls, server         32 workers (``app.UNARY_WORKERS``)    wait for a worker
calls in the server         1024 (``app.MAX_CONCURRENT_RPCS``)    RESOURCE_EXHAUSTED (grpc's own,
                                                                  on its serving thread)
==========================  ====================================  ================================

8 MiB is twice the store's commit limit (4 MiB), so any committed record fits in a reply
with its envelope. A stream is a streaming RPC (Exec, Replay, Follow, Export, Connect, ...)
from its start until its worker is done with it, for any reason (done, failed, canceled,
the peer gone); a turn is Exec, ResumeStream, Resume, Compact or Rerun, the same way.

Every per-token bound, and the server's total, is counted and refused on grpc's serving
thread before the call takes or waits for a worker (:mod:`agentsessions.server.admission` says how,
and why there); a refusal is one RESOURCE_EXHAUSTED line naming the bound and the flag that raises
it. Streams and turns run on a pool of their own of ``--max-streams`` workers, unary calls
on the server's pool of 32, so no number of streams leaves unary calls without a worker.
Why these numbers: 16 streams is a busy client (a UI following a dozen sessions) and a
quarter of the server's 64, so four tokens at their limit still leave room; 8 turns in
flight is more than an interactive client runs and bounds the model calls one token drives
at once; 200 requests a second is far above an interactive client (a CLI makes a few per
command) and far below what one process can serve (a unary call costs about a millisecond
of CPU), so one token cannot take the CPU from the rest; the burst of 400 lets a client
that was quiet list and fetch a page of sessions at once. The operator of a listener
without auth (no token) is bound only by the server's totals. Calls without a token
(health, reflection) share one budget; a health ``Check`` is never rate-limited (a load
balancer's probe must not fail because someone floods), a health ``Watch`` holds no worker
and is not counted. 1024 calls in the server at once (running or waiting for a worker) is
grpc's own backstop: beyond it nothing queues, every call is refused at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentsessions.errors import InvalidArgumentError
from agentsessions.v1.limits import DEFAULT_PAGE_SIZE, MAX_FORK_CHILDREN, MAX_PAGE_SIZE

DEFAULT_MAX_MESSAGE_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_STREAMS = 64
DEFAULT_MAX_STREAMS_PER_TOKEN = 16
DEFAULT_MAX_TURNS_PER_TOKEN = 8
DEFAULT_MAX_RPS_PER_TOKEN = 200
DEFAULT_MAX_STREAMS_PER_CLIENT = DEFAULT_MAX_STREAMS_PER_TOKEN
"""The old name (``--max-streams-per-client`` is the old name of ``--max-streams-per-token``)."""


@dataclass(frozen=True)
class Limits:
    """A server's bounds (see the module's table)."""

    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    max_streams: int = DEFAULT_MAX_STREAMS
    max_streams_per_token: int = DEFAULT_MAX_STREAMS_PER_TOKEN
    max_turns_per_token: int = DEFAULT_MAX_TURNS_PER_TOKEN
    max_rps_per_token: int = DEFAULT_MAX_RPS_PER_TOKEN
    max_page_size: int = MAX_PAGE_SIZE
    max_fork_count: int = MAX_FORK_CHILDREN

    def __post_init__(self) -> None:
        for name in (
            "max_message_bytes",
            "max_streams",
            "max_streams_per_token",
            "max_turns_per_token",
            "max_rps_per_token",
        ):
            if getattr(self, name) < 1:
                flag = "--" + name.replace("_", "-")
                raise InvalidArgumentError(f"{flag} must be at least 1, got {getattr(self, name)}")
        if not 1 <= self.max_page_size <= MAX_PAGE_SIZE:
            raise InvalidArgumentError(f"max page size must be 1..{MAX_PAGE_SIZE}")
        if not 1 <= self.max_fork_count <= MAX_FORK_CHILDREN:
            raise InvalidArgumentError(f"max fork count must be 1..{MAX_FORK_CHILDREN}")

    def grpc_options(self) -> list[tuple[str, Any]]:
        """The server's channel options: message sizes both ways.

        Not HTTP/2's MAX_CONCURRENT_STREAMS (``grpc.max_concurrent_streams``), a bound per
        connection; measured with grpcio 1.85 (bench/streams.py, a bound of 100):

        - with grpc's default overload protection (``grpc.http.overload_protection``: a
          stream counts until the application has let its call go, not until HTTP/2 closes
          it) the server resets streams a client sent within the bound (REFUSED_STREAM),
          and grpc's clients raise UNAVAILABLE ("RST_STREAM error code 7"), not retried:
          6,500-7,400 of a 10,000-stream flood;
        - without it, a client on an established connection queues its calls beyond the
          bound and every refused one is our RESOURCE_EXHAUSTED (peak RSS 82 MiB against
          103; after a flood the same); but a client that starts well over the bound at
          once on a fresh connection, before the server's SETTINGS took effect, can wedge
          them all, the ones the server ran too, until their deadlines (bound 2, 20 calls:
          every run; bound 100, 1,000 calls, client and server in two processes: 1 run in
          3; 150 calls in one process: every run), forever without a deadline.

        A hang for a well-behaved client that opens a channel and fans out is worse than
        the peak it saves; admission bounds streams per token (and per peer without auth),
        and a flood's refusals leave memory within 10% of idle without it
        (:mod:`agentsessions.server.memory`).
        """
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
