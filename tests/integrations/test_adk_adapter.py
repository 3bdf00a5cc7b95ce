"""The ADK adapter beyond ADK's own assertions (issue 19, part 3): what agentsessions adds and
what it refuses, on the file store, encrypted at rest and JetStream.

An ADK session is an ordinary session (``agentsessions verify/log/get`` work on it offline,
``replay --rerun`` reproduces it), its session-scoped state is its working state, two
processes on one session are serialised (a stale writer is refused, none lost), and bad input
writes nothing. ADK's own assertions are in ``test_adk_session_service.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from needs import need

need("google.adk", "adk")

from google.adk.errors import StaleSessionError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events import Event, EventActions
from google.adk.sessions import Session
from google.genai import types
from stores import STORES, adapter_where, cli, imports_no, refuses_a_down_store

import agentsessions
from agentsessions.errors import HarnessError, InvalidArgumentError, UnavailableError
from agentsessions.integrations import adk_harness
from agentsessions.integrations.adk import AgentSessionsService

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=STORES)
def where(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """How to open the service on each store: ``where`` and ``key_file``."""
    return adapter_where(request.param, tmp_path, request, tag="adk")


def _service(where: dict[str, Any]) -> AgentSessionsService:
    return AgentSessionsService(where["where"], key_file=where.get("key_file"))


def _event(text: str, delta: dict[str, Any] | None = None) -> Event:
    return Event(
        invocation_id="inv",
        author="user",
        content=types.Content(role="user", parts=[types.Part(text=text)]),
        actions=EventActions(state_delta=delta or {}),
    )


def _texts(session: Session) -> list[str]:
    return [str(e.content.parts[0].text) for e in session.events if e.content and e.content.parts]


def test_the_state_is_the_working_state_and_the_session_verifies_with_the_cli(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"

    async def go() -> str:
        async with AgentSessionsService(str(home)) as service:
            s = await service.create_session(app_name="a", user_id="u", state={"k": 0})
            for i in range(3):
                await service.append_event(s, _event(f"m{i}", {"k": i + 1, "temp:t": i}))
            return service.uid("a", "u", s.id)

    uid = asyncio.run(go())
    out = {}
    export = str(tmp_path / "adk.agx")
    for args in (
        ["verify", uid],
        ["log", uid],
        ["get", uid, "--json"],
        ["list", "--project", "adk", "--json"],
        ["follow", uid, "--idle-exit", "0.2"],
        ["export", uid, "-o", export],
        ["verify", export],
        ["fork", uid, "--name", "branch"],
    ):
        out.setdefault(args[0], cli(home, *args).stdout)
    got = json.loads(out["get"])
    assert got["harness"] == "adk" and got["project"] == "adk"
    assert got["working_state"]["version"] == 4  # the create and three events
    assert "temp:t" not in out["log"]  # temp keys are never written
    assert out["follow"].count("\n") == 12 == out["log"].count("\n") - 1  # log has a header
    with agentsessions.open(home) as engine:
        report = engine.rerun(uid)  # the adk harness re-driven
        assert report.identical and report.model_calls == 0
        assert [s.name for s in engine.list(project="adk").sessions] == [
            "branch",  # the CLI's fork: an ordinary child session
            "session/a/u/" + got["name"].rsplit("/", 1)[1],
            "user/a/u",
            "app/a",
        ]


def test_names_keep_ids_with_slashes_apart(where: dict[str, Any]) -> None:
    async def go() -> None:
        async with _service(where) as service:
            await service.create_session(app_name="a/b", user_id="c", session_id="d")
            await service.create_session(app_name="a", user_id="b/c", session_id="d")
            one = (await service.list_sessions(app_name="a/b")).sessions
            two = (await service.list_sessions(app_name="a")).sessions
            assert [(s.user_id, s.id) for s in one] == [("c", "d")]
            assert [(s.user_id, s.id) for s in two] == [("b/c", "d")]

    asyncio.run(go())


def test_a_second_service_sees_the_first_ones_writes_and_deletion(where: dict[str, Any]) -> None:
    """Two services (two engines, as two processes have) on one store. On the file store an
    engine keeps a session's writer, and its lock, between turns: the other engine's write
    waits for it (up to 60 s, then LockHeldError), so each closes when its part is done."""

    async def go() -> None:
        async with _service(where) as one:
            s = await one.create_session(app_name="a", user_id="u", session_id="s")
            await one.append_event(s, _event("hi", {"k": 1, "app:v": 2}))
            async with _service(where) as two:
                got = await two.get_session(app_name="a", user_id="u", session_id="s")
                assert got is not None and _texts(got) == ["hi"]
                assert got.state == {"k": 1, "app:v": 2}
                await two.append_event(got, _event("again", {"k": 3}))
            with pytest.raises(StaleSessionError):  # `s` is behind what `two` wrote
                await one.append_event(s, _event("stale"))
            await one.delete_session(app_name="a", user_id="u", session_id="s")
        async with _service(where) as three:
            assert await three.get_session(app_name="a", user_id="u", session_id="s") is None
            with pytest.raises(SessionNotFoundError):
                await three.append_event(got, _event("gone"))
            listed = await three.list_sessions(app_name="a")
            assert listed.sessions == []

    asyncio.run(go())


def test_a_stale_write_that_reaches_the_engine_fails_its_turn_and_takes_no_effect(
    tmp_path: Path,
) -> None:
    """The check inside the turn: a write made against an older count (as a process that
    read before another's append would make it) fails, ERROR recorded, and is not folded."""
    home = str(tmp_path / "home")

    async def go() -> None:
        async with AgentSessionsService(home) as service:
            s = await service.create_session(app_name="a", user_id="u", session_id="s")
            await service.append_event(s, _event("one", {"k": 1}))
            uid = service.uid("a", "u", "s")
            late = {"event": _event("late", {"k": 2}).model_dump(mode="json"), "expect": 0}
            message = {"role": "user", "parts": [{"data": {"data": {"adk": late}}}]}
            with pytest.raises(HarnessError, match="stale session"):
                service._engine.run(uid, [message], harness="adk")
            got = await service.get_session(app_name="a", user_id="u", session_id="s")
            assert got is not None and _texts(got) == ["one"] and got.state == {"k": 1}
            await service.append_event(got, _event("two"))  # the session goes on
            assert service._engine.verify(uid).ok

    asyncio.run(go())


def test_app_and_user_deltas_a_dead_writer_left_out_are_written_by_the_next_reader(
    where: dict[str, Any],
) -> None:
    """A writer that dies after its event's turn, before the app and user scopes have the
    event's delta (as here: the turn written straight to the engine): the next service to
    read the session writes the delta there, once."""

    async def go() -> None:
        async with _service(where) as service:
            await service.create_session(
                app_name="a", user_id="u", session_id="s", state={"app:x": 0, "user:y": 0}
            )
            uid = service.uid("a", "u", "s")
            event = _event("died", {"app:x": 1, "user:y": 2, "k": 3})
            body = {"event": event.model_dump(mode="json", exclude_none=True), "expect": 0}
            message = {"role": "user", "parts": [{"data": {"data": {"adk": body}}}]}
            service._engine.run(uid, [message], harness="adk")
            assert await service.get_user_state(app_name="a", user_id="u") == {"y": 0}
        async with _service(where) as later:
            got = await later.get_session(app_name="a", user_id="u", session_id="s")
            assert got is not None and _texts(got) == ["died"]
            assert got.state == {"app:x": 1, "user:y": 2, "k": 3}
            again = await later.get_session(app_name="a", user_id="u", session_id="s")
            assert again is not None and again.state == got.state
            for scope in ("app/a", "user/a/u"):  # the create's delta and the repaired one
                scope_uid = later._uids[scope]
                records = [json.dumps(r.event) for r in later._engine.read(scope_uid)]
                assert sum('"from"' in r for r in records) == 2, scope

    asyncio.run(go())


def test_bad_input_writes_nothing(where: dict[str, Any]) -> None:
    async def go() -> None:
        async with _service(where) as service:
            s = await service.create_session(app_name="a", user_id="u", session_id="s")
            uid = service.uid("a", "u", "s")
            head = service._engine.get(uid).last_seq
            for delta in ({"k": object()}, {"k": float("nan")}, {"app:k": lambda: 1}):
                with pytest.raises(InvalidArgumentError):
                    await service.append_event(s, _event("bad", delta))
            with pytest.raises(InvalidArgumentError, match="float64"):  # not JCS-exact
                await service.append_event(s, _event("big", {"k": 2**60}))
            with pytest.raises(InvalidArgumentError):
                await service.create_session(app_name="a", user_id="u", state={"k": object()})
            assert service._engine.get(uid).last_seq == head
            got = await service.get_session(app_name="a", user_id="u", session_id="s")
            assert got is not None and got.events == [] and got.state == {}
            stranger = Session(id="nope", app_name="a", user_id="u")
            with pytest.raises(SessionNotFoundError):
                await service.append_event(stranger, _event("x"))
            await service.append_event(s, _event("ok", {"k": 1.5}))  # still usable

    asyncio.run(go())


def test_a_closed_service_refuses_and_a_down_store_is_unavailable(tmp_path: Path) -> None:
    service = AgentSessionsService(str(tmp_path / "home"))
    asyncio.run(service.close())
    asyncio.run(service.close())  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(service.get_session(app_name="a", user_id="u", session_id="s"))
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(service.create_session(app_name="a", user_id="u"))
    refuses_a_down_store(AgentSessionsService)


def test_a_store_that_goes_down_is_unavailable_and_nothing_is_half_written() -> None:
    """JetStream stops under a running service: the append raises our UnavailableError; once
    the server is back the session has exactly the events before it, and goes on."""
    from natsserver import NatsServer
    from needs import need_nats_server

    server = NatsServer(need_nats_server()).start()  # its own: this test stops it
    try:
        url = server.store_url(stream="adkdown", prefix="adkdown")

        async def before() -> Session:
            service = AgentSessionsService(url)
            s = await service.create_session(app_name="a", user_id="u", session_id="s")
            await service.append_event(s, _event("kept", {"k": 1}))
            server.stop()
            with pytest.raises(UnavailableError):
                await service.append_event(s, _event("lost", {"k": 2}))
            return s

        s = asyncio.run(before())
        server.start()

        async def after() -> None:
            async with AgentSessionsService(url) as service:
                got = await service.get_session(app_name="a", user_id="u", session_id="s")
                assert got is not None and _texts(got) == ["kept"] and got.state == {"k": 1}
                await service.append_event(got, _event("again"))
                assert service._engine.verify(service.uid("a", "u", "s")).ok
            assert s.state == {"k": 1}  # the caller's object was not touched by the failure

        asyncio.run(after())
    finally:
        server.cleanup()


def test_the_harness_and_the_fold_agree_on_the_state() -> None:
    state = adk_harness.empty()
    adk_harness.apply(state, {"create": {"a": 1}})
    event = {"actions": {"state_delta": {"a": 2, "app:x": 1, "user:y": 2, "b": [1]}}}
    adk_harness.apply(state, {"event": event, "expect": 0})
    adk_harness.apply(state, {"delta": {"x": 3}, "from": "u", "n": 1})
    assert state == {"n": 2, "state": {"a": 2, "b": [1], "x": 3}}
    with pytest.raises(adk_harness.StaleWriteError):
        adk_harness.apply(state, {"event": event, "expect": 1})


def test_threads_on_one_service_lose_nothing(tmp_path: Path) -> None:
    """One service shared by threads, each with its own event loop: two on one session
    (re-reading on StaleSessionError), two on sessions of their own, all writing app state."""
    service = AgentSessionsService(str(tmp_path / "home"))
    errors: list[BaseException] = []

    async def setup() -> None:
        for sid in ("shared", "t2", "t3"):
            await service.create_session(app_name="a", user_id="u", session_id=sid)

    def writer(name: str, sid: str) -> None:
        async def go() -> None:
            for i in range(10):
                while True:
                    s = await service.get_session(app_name="a", user_id="u", session_id=sid)
                    assert s is not None
                    try:
                        await service.append_event(s, _event(f"{name}{i}", {"app:" + name: i}))
                        break
                    except StaleSessionError:
                        continue

        try:
            asyncio.run(go())
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    try:
        asyncio.run(setup())
        jobs = [("w0", "shared"), ("w1", "shared"), ("w2", "t2"), ("w3", "t3")]
        threads = [threading.Thread(target=writer, args=job) for job in jobs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors

        async def check() -> None:
            for sid, names in (("shared", "w0 w1"), ("t2", "w2"), ("t3", "w3")):
                got = await service.get_session(app_name="a", user_id="u", session_id=sid)
                assert got is not None
                texts = _texts(got)
                for name in names.split():
                    assert [t for t in texts if t[:2] == name] == [f"{name}{i}" for i in range(10)]
                assert len(texts) == 10 * len(names.split())
                assert {got.state[f"app:w{n}"] for n in range(4)} == {9}

        asyncio.run(check())
    finally:
        asyncio.run(service.close())


ROUNDS = 25
_WRITER = textwrap.dedent(
    """
    import asyncio, os, sys, time
    from google.adk.errors import StaleSessionError
    from google.adk.events import Event, EventActions
    from google.genai import types
    from agentsessions.integrations.adk import AgentSessionsService

    async def main():
        service = AgentSessionsService(sys.argv[1], key_file=sys.argv[3] or None)
        p, retries = sys.argv[2], 0
        open(sys.argv[4] + p, "w").close()  # ready: imported, service open
        while not os.path.exists(sys.argv[4] + "go"):
            time.sleep(0.001)
        for i in range(ROUNDS):
            while True:
                s = await service.get_session(app_name="a", user_id="u", session_id="shared")
                text = types.Content(role="user", parts=[types.Part(text=f"{p}{i}")])
                delta = {f"{p}": i, "app:last": f"{p}{i}"}
                try:
                    await service.append_event(
                        s, Event(author=p, content=text, actions=EventActions(state_delta=delta))
                    )
                    break
                except StaleSessionError:
                    retries += 1
        await service.close()
        print(retries)

    asyncio.run(main())
    """
).replace("ROUNDS", str(ROUNDS))


def test_two_processes_on_one_session_are_serialised(where: dict[str, Any], tmp_path: Path) -> None:
    """Two processes append to one ADK session at once, each re-reading on StaleSessionError
    as ADK's callers do: every event lands once, in each writer's order, the state has both
    writers' last values, and the journal verifies."""

    async def seed() -> None:
        async with _service(where) as service:
            await service.create_session(app_name="a", user_id="u", session_id="shared")

    asyncio.run(seed())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    flag = str(tmp_path / "flag-")
    argv = [where["where"], where.get("key_file") or "", flag]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, argv[0], p, argv[1], argv[2]],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for p in ("a", "b")
    ]
    deadline = time.monotonic() + 120
    while not all(os.path.exists(flag + p) for p in "ab"):  # both ready: start at once
        assert time.monotonic() < deadline and all(proc.poll() is None for proc in procs)
        time.sleep(0.01)
    Path(flag + "go").touch()
    retries = 0
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err.decode()[-3000:]
        retries += int(out)  # the writer's StaleSessionError retries
    assert retries > 0  # they did race: each lost at least once, or one lost its first

    async def check() -> None:
        async with _service(where) as service:
            got = await service.get_session(app_name="a", user_id="u", session_id="shared")
            assert got is not None
            texts = _texts(got)
            every = [f"{p}{i}" for p in "ab" for i in range(ROUNDS)]
            assert sorted(texts) == sorted(every)  # each once: none lost, none twice
            for p in "ab":  # each writer's events in its order
                assert [t for t in texts if t[0] == p] == [f"{p}{i}" for i in range(ROUNDS)]
            last = ROUNDS - 1
            assert (got.state["a"], got.state["b"]) == (last, last)
            assert got.state["app:last"] in (f"a{last}", f"b{last}")
            assert service._engine.verify(service.uid("a", "u", "shared")).ok

    asyncio.run(check())


def test_the_base_install_imports_no_adk() -> None:
    imports_no("google.adk", "agentsessions.integrations.adk_harness")
