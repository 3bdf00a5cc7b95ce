"""Two stores (two hosts, as far as they know) opening one session's writer at once: one
writer results and the other open is refused (LockHeldError, which the engine waits out),
never a writer fenced while a turn may already use it.

The interleavings are forced, not hoped for: host B's open is stopped at a chosen step
(after its probe, before it starts answering) while host A opens the writer whole. Before
the open read the head first, B then read A's fence as the head and fenced A. One durable
server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agentsessions.errors import LockHeldError
from agentsessions.journal.stores.jetstream import live
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.journal.stores.jetstream.writer import JetStreamWriter
from agentsessions.journal.stores.store import SessionMeta, new_uid
from agentsessions.v1 import construct


def _say(text: str) -> dict[str, Any]:
    return construct.input_event(construct.text_message("user", text), execution_id="e1")


@pytest.fixture
def hosts(nats_server: Any) -> Iterator[tuple[JetStreamStore, JetStreamStore, str]]:
    token = new_uid()[5:17]
    url = nats_server.store_url(stream=f"R{token}", prefix=f"r{token}")
    a, b = JetStreamStore(JetStreamOptions.parse(url)), JetStreamStore(JetStreamOptions.parse(url))
    uid = new_uid()
    a.create(SessionMeta(uid=uid))
    with a.writer(uid) as w:
        w.append([_say("first")])
    yield a, b, uid
    a.close()
    b.close()


def _once_in(monkeypatch: pytest.MonkeyPatch, name: str, first: Callable[[], object]) -> None:
    """Run ``first`` when ``live.<name>`` is next called (by B's open), then go on."""
    real = getattr(live, name)
    armed = [True]

    def hooked(*args: Any, **kwargs: Any) -> Any:
        if armed[0]:
            armed[0] = False
            first()
        return real(*args, **kwargs)

    monkeypatch.setattr(live, name, hooked)


@pytest.mark.parametrize("step", ["probe", "serve"])
def test_an_open_racing_another_is_refused_and_never_fences_it(
    hosts: tuple[JetStreamStore, JetStreamStore, str], monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """A opens whole while B's open is stopped before its probe (B then hears A busy) or
    between its probe and its answer (B's probe heard nobody; its fence CAS at the head it
    read before A's fence fails, and the probe it makes again hears A busy)."""
    a, b, uid = hosts
    opened: list[JetStreamWriter] = []
    _once_in(monkeypatch, step, lambda: opened.append(a.writer(uid)))
    with pytest.raises(LockHeldError, match="busy"):
        b.writer(uid)
    (writer,) = opened
    try:
        result = writer.append([_say("a's turn goes on")])  # not fenced by B
        assert result.last_seq == 2
        assert not writer.superseded()
    finally:
        writer.close()
    with b.writer(uid) as w:  # A closed: B opens now
        assert w.head[0] == 2
