"""ADK's own session-service assertions, ported, on our service and on ADK's (issue 19, part 3).

Each test here restates, in our words, the assertions of one test of ADK's
``tests/unittests/sessions/test_session_service.py`` (google/adk-python, the file as of commit
bf27f22a9534279b942bb8047d747effc9e7dd7a), parametrised over ADK's ``InMemorySessionService``
and ``DatabaseSessionService`` (SQLite, in memory) beside our ``AgentSessionsService`` on the
file store, the file store encrypted at rest and JetStream: the same assertions pass on ADK's
services, so they are ADK's semantics, not ours. That file is not shipped in ADK's source
distribution, so it cannot be fetched at test time; ``adk_upstream.md`` records the run of the
file itself against our service (which tests, from which commit, passed). The tests after
the ports check ADK 2.13 behaviours the older file does not (stale sessions, duplicate ids,
user state, partial events, ``num_recent_events=0``), on the same services.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from needs import need

need("google.adk", "adk")
need("sqlalchemy", "dev")

from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events import Event, EventActions
from google.adk.sessions import DatabaseSessionService, InMemorySessionService
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig
from google.genai import types
from stores import STORES, adapter_where

from agentsessions.integrations.adk import AgentSessionsService

Make = Callable[[], BaseSessionService]
SERVICES = ["in_memory", "database", *STORES]


@pytest.fixture(params=SERVICES)
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Make]:
    """A maker of the service under test (made inside the test's event loop)."""
    kind = request.param
    if kind == "in_memory":
        yield InMemorySessionService
    elif kind == "database":
        yield lambda: DatabaseSessionService("sqlite+aiosqlite:///:memory:")
    else:  # ours, on one of the stores
        where = adapter_where(kind, tmp_path, request, tag="adk")
        yield lambda: AgentSessionsService(where["where"], key_file=where.get("key_file"))


def run(make: Make, body: Callable[[Any], Awaitable[None]]) -> None:
    """Run ``body(service)`` in one event loop, closing the service after."""

    async def go() -> None:
        service = make()
        try:
            await body(service)
        finally:
            close = getattr(service, "close", None)
            if close is not None:
                await close()

    asyncio.run(go())


def _text_event(delta: dict[str, Any] | None = None, text: str = "text") -> Event:
    return Event(
        invocation_id="invocation",
        author="user",
        content=types.Content(role="user", parts=[types.Part(text=text)]),
        actions=EventActions(state_delta=delta or {}),
    )


# --- ports of ADK's test_session_service.py ---------------------------------------------------


def test_a_session_never_created_is_none(make: Make) -> None:
    """Port of ``test_get_empty_session``."""

    async def body(service: Any) -> None:
        assert await service.get_session(app_name="my_app", user_id="u", session_id="123") is None

    run(make, body)


def test_create_then_get_returns_an_equal_session_and_delete_hides_it(make: Make) -> None:
    """Port of ``test_create_get_session``."""

    async def body(service: Any) -> None:
        made = await service.create_session(app_name="my_app", user_id="u", state={"key": "v"})
        assert (made.app_name, made.user_id, made.state) == ("my_app", "u", {"key": "v"})
        assert made.id
        got = await service.get_session(app_name="my_app", user_id="u", session_id=made.id)
        assert got == made
        await service.delete_session(app_name="my_app", user_id="u", session_id=made.id)
        assert await service.get_session(app_name="my_app", user_id="u", session_id=made.id) != made

    run(make, body)


def test_list_returns_a_users_sessions_in_creation_order(make: Make) -> None:
    """Port of ``test_create_and_list_sessions``."""

    async def body(service: Any) -> None:
        ids = [f"session{i}" for i in range(5)]
        for sid in ids:
            await service.create_session(app_name="my_app", user_id="u", session_id=sid)
        listed = (await service.list_sessions(app_name="my_app", user_id="u")).sessions
        assert [s.id for s in listed] == ids

    run(make, body)


def test_state_is_scoped_to_session_user_and_app_and_temp_is_dropped(make: Make) -> None:
    """Port of ``test_session_state``."""

    async def body(service: Any) -> None:
        s11 = await service.create_session(
            app_name="my_app", user_id="user1", state={"key11": "value11"}, session_id="s11"
        )
        await service.create_session(
            app_name="my_app", user_id="user1", state={"key12": "value12"}, session_id="s12"
        )
        await service.create_session(app_name="my_app", user_id="user2", session_id="s2")
        assert s11.state.get("key11") == "value11"
        delta = {"app:key": "value", "user:key1": "value1", "temp:key": "temp"}
        await service.append_event(s11, _text_event({**delta, "key11": "value11_new"}))
        assert s11.state.get("app:key") == "value"
        assert s11.state.get("key11") == "value11_new"
        assert s11.state.get("user:key1") == "value1"
        # ADK 2.x keeps temp keys on the caller's object for the rest of the invocation
        # (the 1.4-era file asserted they were absent there); they are never persisted:
        s12 = await service.get_session(app_name="my_app", user_id="user1", session_id="s12")
        assert s12.state.get("key12") == "value12"
        assert not s12.state.get("temp:key")
        s2 = await service.get_session(app_name="my_app", user_id="user2", session_id="s2")
        assert s2.state.get("app:key") == "value"  # app state reaches every user
        assert not s2.state.get("user:key1")  # user state does not
        again = await service.get_session(app_name="my_app", user_id="user1", session_id="s11")
        assert again.state.get("key11") == "value11_new"
        assert again.state.get("user:key1") == "value1"
        assert not again.state.get("temp:key")

    run(make, body)


def test_a_new_session_gets_the_app_and_user_state_but_not_anothers(make: Make) -> None:
    """Port of ``test_create_new_session_will_merge_states``."""

    async def body(service: Any) -> None:
        first = await service.create_session(
            app_name="my_app", user_id="user", state={"key1": "value1"}, session_id="session1"
        )
        delta = {"app:key": "value", "user:key1": "value1", "temp:key": "temp"}
        await service.append_event(first, _text_event(delta))
        assert first.state.get("app:key") == "value"
        assert first.state.get("key1") == "value1"
        assert first.state.get("user:key1") == "value1"
        second = await service.create_session(
            app_name="my_app", user_id="user", state={}, session_id="session2"
        )
        assert second.state.get("app:key") == "value"
        assert second.state.get("user:key1") == "value1"
        assert not second.state.get("key1")
        assert not second.state.get("temp:key")

    run(make, body)


def test_bytes_in_content_and_grounding_metadata_round_trip(make: Make) -> None:
    """Port of ``test_append_event_bytes``."""

    async def body(service: Any) -> None:
        session = await service.create_session(app_name="my_app", user_id="user")
        content = types.Content(
            role="user",
            parts=[types.Part.from_bytes(data=b"test_image_data\xff\x00", mime_type="image/png")],
        )
        grounding = types.GroundingMetadata(
            search_entry_point=types.SearchEntryPoint(sdk_blob=b"test_sdk_blob")
        )
        event = Event(
            invocation_id="invocation",
            author="user",
            content=content,
            grounding_metadata=grounding,
        )
        await service.append_event(session=session, event=event)
        assert session.events[0].content == content
        got = await service.get_session(app_name="my_app", user_id="user", session_id=session.id)
        assert len(got.events) == 1
        assert got.events[0].content == content
        assert got.events[0].grounding_metadata == grounding

    run(make, body)


def test_an_event_with_every_field_set_round_trips(make: Make) -> None:
    """Port of ``test_append_event_complete``."""

    async def body(service: Any) -> None:
        session = await service.create_session(app_name="my_app", user_id="user")
        event = Event(
            invocation_id="invocation",
            author="user",
            content=types.Content(role="user", parts=[types.Part(text="test_text")]),
            turn_complete=True,
            partial=False,
            actions=EventActions(
                artifact_delta={"file": 0}, transfer_to_agent="agent", escalate=True
            ),
            long_running_tool_ids={"tool1"},
            error_code="error_code",
            error_message="error_message",
            interrupted=True,
        )
        await service.append_event(session=session, event=event)
        got = await service.get_session(app_name="my_app", user_id="user", session_id=session.id)
        assert got == session

    run(make, body)


def test_get_with_config_selects_recent_events_and_events_after_a_time(make: Make) -> None:
    """Port of ``test_get_session_with_config``."""

    async def body(service: Any) -> None:
        session = await service.create_session(app_name="my_app", user_id="user")
        for i in range(1, 6):
            await service.append_event(session, Event(author="user", timestamp=i))

        async def events(config: GetSessionConfig | None = None) -> list[Event]:
            got = await service.get_session(
                app_name="my_app", user_id="user", session_id=session.id, config=config
            )
            return list(got.events)

        assert len(await events()) == 5
        recent = await events(GetSessionConfig(num_recent_events=3))
        assert len(recent) == 3 and recent[0].timestamp == 3
        after = await events(GetSessionConfig(after_timestamp=4.0))
        assert len(after) == 2 and after[0].timestamp == 4.0  # inclusive
        assert not await events(GetSessionConfig(after_timestamp=50))
        both = await events(GetSessionConfig(after_timestamp=4.0, num_recent_events=3))
        assert len(both) == 2

    run(make, body)


# --- ADK 2.13 behaviours the older file does not check ----------------------------------------


def test_no_recent_events_asked_returns_none_and_the_state(make: Make) -> None:
    async def body(service: Any) -> None:
        session = await service.create_session(app_name="a", user_id="u", state={"k": 1})
        await service.append_event(session, _text_event({"k": 2}))
        got = await service.get_session(
            app_name="a",
            user_id="u",
            session_id=session.id,
            config=GetSessionConfig(num_recent_events=0),
        )
        assert got.events == [] and got.state == {"k": 2}

    run(make, body)


def test_a_duplicate_session_id_is_refused(make: Make) -> None:
    async def body(service: Any) -> None:
        await service.create_session(app_name="a", user_id="u", session_id="same")
        with pytest.raises(AlreadyExistsError):
            await service.create_session(app_name="a", user_id="u", session_id="same")
        # another user may use the id
        await service.create_session(app_name="a", user_id="v", session_id="same")

    run(make, body)


def test_an_append_to_a_session_that_is_gone_is_session_not_found(make: Make) -> None:
    async def body(service: Any) -> None:
        session = await service.create_session(app_name="a", user_id="u", session_id="s")
        await service.delete_session(app_name="a", user_id="u", session_id="s")
        with pytest.raises(SessionNotFoundError):
            await service.append_event(session, _text_event())
        await service.delete_session(app_name="a", user_id="u", session_id="never")  # no error

    run(make, body)


def test_user_state_reads_without_a_session(make: Make) -> None:
    async def body(service: Any) -> None:
        session = await service.create_session(
            app_name="a", user_id="u", state={"user:lang": "fr", "k": 1}
        )
        await service.append_event(session, _text_event({"user:tz": "CET"}))
        assert await service.get_user_state(app_name="a", user_id="u") == {
            "lang": "fr",
            "tz": "CET",
        }
        assert await service.get_user_state(app_name="a", user_id="nobody") == {}

    run(make, body)


def test_a_partial_event_is_not_written(make: Make) -> None:
    async def body(service: Any) -> None:
        session = await service.create_session(app_name="a", user_id="u")
        event = _text_event({"k": 1})
        event.partial = True
        assert await service.append_event(session, event) is event
        got = await service.get_session(app_name="a", user_id="u", session_id=session.id)
        assert got.events == [] and "k" not in got.state

    run(make, body)


def test_list_without_a_user_lists_every_users_sessions_with_their_state(make: Make) -> None:
    async def body(service: Any) -> None:
        for user in ("u1", "u2"):
            s = await service.create_session(app_name="a", user_id=user, session_id="s")
            await service.append_event(s, _text_event({"user:who": user, "app:n": 1}))
        await service.create_session(app_name="other", user_id="u1", session_id="x")
        listed = (await service.list_sessions(app_name="a")).sessions
        assert sorted((s.user_id, s.id) for s in listed) == [("u1", "s"), ("u2", "s")]
        for s in listed:
            assert s.events == [] and s.state == {"user:who": s.user_id, "app:n": 1}

    run(make, body)


@pytest.mark.parametrize("make", ["database", "file", "jetstream"], indirect=True)
def test_a_stale_session_object_is_refused(make: Make) -> None:
    """The persistent services refuse an append from an object read before another append
    (ADK's in-memory service accepts it: it has one copy)."""

    async def body(service: Any) -> None:
        made = await service.create_session(app_name="a", user_id="u", session_id="s")
        one = await service.get_session(app_name="a", user_id="u", session_id="s")
        two = await service.get_session(app_name="a", user_id="u", session_id="s")
        await service.append_event(one, _text_event({"k": 1}, "first"))
        with pytest.raises(StaleSessionError):
            await service.append_event(two, _text_event({"k": 2}, "second"))
        with pytest.raises(StaleSessionError):
            await service.append_event(made, _text_event({"k": 3}, "third"))
        await service.append_event(one, _text_event({"k": 4}, "fourth"))  # `one` is current
        got = await service.get_session(app_name="a", user_id="u", session_id="s")
        assert [e.content.parts[0].text for e in got.events] == ["first", "fourth"]
        assert got.state == {"k": 4}

    run(make, body)
