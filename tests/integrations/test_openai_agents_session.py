"""The OpenAI Agents SDK adapter's semantics (issue 19, part 1) on the file store, the file
store encrypted at rest and JetStream: what the SDK relies on, and what agentsessions adds
(nothing deleted, ``verify`` offline, O(1) fork, one writer at a time across processes).

The SDK's own session tests run against the adapter in ``test_openai_agents_sdk_suite.py``.
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

need("agents", "openai-agents")

from stores import (
    ROOT,
    STORES,
    adapter_where,
    cli,
    imports_no,
    refuses_a_down_store,
    run_writers,
)

import agentsessions
from agentsessions.errors import InvalidArgumentError, NotFoundError
from agentsessions.integrations.common import engine_of
from agentsessions.integrations.openai_agents import AgentSessionsSession

ITEMS: list[Any] = [
    {"role": "user", "content": "hello"},
    {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"x": 1}'},
    {"type": "function_call_output", "call_id": "c1", "output": "2.5", "n": [1, 2.5, None]},
    {"role": "assistant", "content": [{"type": "output_text", "text": "héllo ✓"}]},
]


@pytest.fixture(params=STORES)
def where(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """How to open the adapter on each store: ``where`` and ``key_file``."""
    return adapter_where(request.param, tmp_path, request, tag="oa")


def _session(where: dict[str, Any], session_id: str = "conv", **kw: Any) -> AgentSessionsSession:
    return AgentSessionsSession(session_id, where["where"], key_file=where.get("key_file"), **kw)


def test_items_round_trip_and_limit_is_the_latest_oldest_first(where: dict[str, Any]) -> None:
    session = _session(where)
    try:

        async def go() -> None:
            assert await session.get_items() == []
            await session.add_items(ITEMS[:2])
            await session.add_items(ITEMS[2:])
            assert await session.get_items() == ITEMS
            assert await session.get_items(limit=2) == ITEMS[2:]
            assert await session.get_items(limit=0) == []
            assert await session.get_items(limit=10) == ITEMS
            assert await session.get_items(limit=len(ITEMS) + 1) == ITEMS
            again = _session(where)  # a second instance on the same store and id
            try:
                assert await again.get_items() == ITEMS
            finally:
                again.close()

        asyncio.run(go())
    finally:
        session.close()


def test_settings_limit_applies_and_a_dict_is_coerced(where: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        _session(where, session_settings={"limit": 1, "nope": 2})
    session = _session(where, session_settings={"limit": 1})
    try:

        async def go() -> None:
            await session.add_items(ITEMS)
            assert await session.get_items() == ITEMS[-1:]
            assert await session.get_items(limit=3) == ITEMS[-3:]

        asyncio.run(go())
    finally:
        session.close()


def test_pop_and_clear_are_recorded_and_only_touch_their_id(where: dict[str, Any]) -> None:
    session, other = _session(where), _session(where, "other")
    try:

        async def go() -> None:
            assert await session.pop_item() is None
            await session.add_items(ITEMS)
            await other.add_items(ITEMS[:1])
            assert await session.pop_item() == ITEMS[-1]
            assert await session.get_items() == ITEMS[:-1]
            await session.clear_session()
            assert await session.get_items() == []
            assert await session.pop_item() is None
            assert await other.get_items() == ITEMS[:1]
            await session.add_items(ITEMS[:1])
            assert await session.get_items() == ITEMS[:1]

        asyncio.run(go())
        # nothing deleted: every item, the pop and the clear are in the journal, and it verifies
        engine = session._engine
        records = list(engine.read(session.uid))
        kinds = [json.dumps(r.event.get("message", {})) for r in records]
        assert sum('"pop"' in k for k in kinds) == 1 and sum('"clear"' in k for k in kinds) == 1
        assert engine.verify(session.uid).ok
        report = engine.rerun(session.uid)  # the recording harness re-driven
        assert report.identical and report.model_calls == 0
    finally:
        session.close()
        other.close()


def test_an_unserialisable_item_writes_nothing_of_its_batch(where: dict[str, Any]) -> None:
    session = _session(where)
    try:

        async def go() -> None:
            await session.add_items(ITEMS[:1])
            with pytest.raises(TypeError, match="not JSON-serialisable"):
                await session.add_items([ITEMS[1], {"bad": object()}])
            with pytest.raises(TypeError):
                await session.add_items([{"nan": float("nan")}])
            with pytest.raises(InvalidArgumentError, match="float64"):  # not JCS-exact
                await session.add_items([{"ok": 1}, {"big": 2**60}])
            assert await session.get_items() == ITEMS[:1]

        asyncio.run(go())
    finally:
        session.close()


def test_threads_each_with_its_own_loop_lose_and_interleave_nothing(tmp_path: Path) -> None:
    engine = agentsessions.open(tmp_path / "home")
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        session = AgentSessionsSession("shared", engine)
        try:
            for i in range(5):
                batch = [{"w": n, "i": i, "k": 0}, {"w": n, "i": i, "k": 1}]
                asyncio.run(session.add_items(batch))
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    try:
        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        items = asyncio.run(AgentSessionsSession("shared", engine).get_items())
        assert len(items) == 40
        for first, second in zip(items[::2], items[1::2], strict=True):  # batches stay whole
            assert (first["w"], first["i"], first["k"], second["k"]) == (
                second["w"],
                second["i"],
                0,
                1,
            )
        page = engine.list(project="openai-agents")
        assert [s.name for s in page.sessions] == ["shared"]  # one session, not one per thread
    finally:
        engine.close()


def test_a_creator_whose_lookup_missed_the_session_joins_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = agentsessions.open(tmp_path / "home")
    first, late = AgentSessionsSession("race", engine), AgentSessionsSession("race", engine)
    try:
        asyncio.run(first.add_items(ITEMS[:1]))
        # `late` raced `first`: its lookup ran before `first`'s session existed
        real_find = late._find
        calls = iter([""])
        monkeypatch.setattr(late, "_find", lambda: next(calls, None) or real_find())
        asyncio.run(late.add_items(ITEMS[1:2]))
        assert late.uid == first.uid
        assert asyncio.run(first.get_items()) == ITEMS[:2]
        live = engine.list(project="openai-agents").sessions
        assert [s.uid for s in live] == [first.uid]  # the key named one session: no other made
    finally:
        engine.close()


def test_a_pop_that_lost_a_race_reads_again_and_pops_the_new_newest(tmp_path: Path) -> None:
    engine = agentsessions.open(tmp_path / "home")
    mine, other = AgentSessionsSession("conv", engine), AgentSessionsSession("conv", engine)
    try:
        asyncio.run(mine.add_items(ITEMS[:2]))
        asyncio.run(mine.get_items())  # `mine` has read: it would pop ITEMS[1]
        asyncio.run(other.add_items(ITEMS[2:3]))  # but another writer came first
        # a pop naming the stale newest (as a racing process would write) takes no effect
        engine.run(
            mine.uid,
            [
                {
                    "role": "user",
                    "parts": [{"data": {"data": {"openai_agents": {"pop": 3, "id": "stale"}}}}],
                }
            ],
            harness="openai-agents",
        )
        assert asyncio.run(other.get_items()) == ITEMS[:3]
        assert asyncio.run(mine.pop_item()) == ITEMS[2]
        assert asyncio.run(other.get_items()) == ITEMS[:2]
    finally:
        engine.close()


def test_fork_shares_the_prefix_and_diverges(where: dict[str, Any]) -> None:
    session = _session(where)
    try:

        async def go() -> None:
            await session.add_items(ITEMS[:2])
            head = session._engine.get(session.uid).last_seq
            await session.add_items(ITEMS[2:])
            child = session.fork(session_id="branch")
            early = session.fork(at=head)
            await child.add_items([{"role": "user", "content": "only in the child"}])
            assert await child.get_items() == [
                *ITEMS,
                {"role": "user", "content": "only in the child"},
            ]
            assert await early.get_items() == ITEMS[:2]
            assert await session.get_items() == ITEMS
            got = session._engine.get(child.uid)
            assert (got.parent_uid, got.name) == (session.uid, "branch")
            # the child is found by its id, and an id that is taken cannot be forked to
            again = AgentSessionsSession("branch", session._engine)
            assert again.uid == child.uid
            with pytest.raises(InvalidArgumentError, match="exists"):
                session.fork(session_id="branch")
            assert [s.name for s in session._engine.list(project="openai-agents").sessions].count(
                "branch"
            ) == 1  # the refused fork's child was deleted

        asyncio.run(go())
    finally:
        session.close()


def test_cancellation_after_the_commit_keeps_the_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = AgentSessionsSession("conv", tmp_path / "home")
    committed, release = threading.Event(), threading.Event()
    write = session._write

    def write_then_pause(messages: list[dict[str, Any]]) -> None:
        write(messages)  # the real, durable write
        committed.set()
        assert release.wait(10)

    monkeypatch.setattr(session, "_write", write_then_pause)

    async def go() -> None:
        task = asyncio.create_task(session.add_items(ITEMS[:1]))
        assert await asyncio.to_thread(committed.wait, 10)
        task.cancel()
        await asyncio.sleep(0)
        task.cancel()  # twice, as the SDK's own test does
        await asyncio.sleep(0)
        assert not task.done()  # it waits for the outcome of the write
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await session.get_items() == ITEMS[:1]

    try:
        asyncio.run(go())
    finally:
        release.set()
        session.close()


def test_a_closed_adapter_refuses_and_an_unwritten_one_has_no_uid(tmp_path: Path) -> None:
    session = AgentSessionsSession("conv", tmp_path / "home")
    assert session.uid == ""
    session.close()
    session.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(session.get_items())


def test_bad_input_is_refused_with_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="non-empty"):
        AgentSessionsSession("", tmp_path / "home")
    session = AgentSessionsSession("never-written", tmp_path / "home")
    try:
        with pytest.raises(NotFoundError, match="no history to fork"):
            session.fork()
    finally:
        session.close()
    refuses_a_down_store(lambda url: AgentSessionsSession("conv", url))


def test_the_session_verifies_offline_with_the_cli(tmp_path: Path) -> None:
    home = tmp_path / "home"
    session = AgentSessionsSession("conv", home)
    asyncio.run(session.add_items(ITEMS))
    asyncio.run(session.pop_item())
    uid = session.uid
    session.close()
    for args in (["verify", uid], ["log", uid]):
        cli(home, *args)


_WRITER = textwrap.dedent(
    """
    import asyncio, json, sys
    from agentsessions.integrations.openai_agents import AgentSessionsSession
    s = AgentSessionsSession("shared", sys.argv[1], key_file=sys.argv[3] or None)
    n = sys.argv[2]
    for i in range(15):
        asyncio.run(s.add_items([{"p": n, "i": i, "k": 0}, {"p": n, "i": i, "k": 1}]))
    print(json.dumps([asyncio.run(s.pop_item()) for _ in range(3)]))
    s.close()
    """
)


def test_two_processes_on_one_session_are_serialised(where: dict[str, Any]) -> None:
    """Two processes write and pop one session id at once: one session, every batch whole
    and in its writer's order, no item popped twice, nothing lost. (The session exists
    first; creating a new id at once is the next test.)"""
    seed = _session(where, "shared")
    asyncio.run(seed.add_items([{"p": "seed", "i": 0, "k": 0}]))
    seed.close()
    popped: list[Any] = []
    for out in run_writers(_WRITER, where, ("a", "b")):
        popped += json.loads(out)
    reader = _session(where, "shared")
    try:
        kept = [(x["p"], x["i"], x["k"]) for x in asyncio.run(reader.get_items())]
        assert kept[0] == ("seed", 0, 0)  # 6 pops, 60 items: the seed stays
        kept = kept[1:]
        gone = [(x["p"], x["i"], x["k"]) for x in popped]
        assert len(kept + gone) == len(set(kept + gone)) == 60  # none popped twice, none lost
        for p in ("a", "b"):  # each writer's items in its order
            mine = [key for key in kept if key[0] == p]
            assert mine == sorted(mine)
        at = {key: n for n, key in enumerate(kept)}
        for p, i, k in kept:  # batches never interleaved: a kept pair sits side by side
            if k == 0 and (p, i, 1) in at:
                assert at[p, i, 1] == at[p, i, 0] + 1
        assert [s.name for s in reader._engine.list(project="openai-agents").sessions] == ["shared"]
        assert reader._engine.verify(reader.uid).ok
    finally:
        reader.close()


_CREATOR = textwrap.dedent(
    """
    import asyncio, os, sys, time
    from agentsessions.integrations.openai_agents import AgentSessionsSession
    where, name, key_file, flags, rounds = sys.argv[1:6]
    for r in range(int(rounds)):  # every round a new id, all writers released at once
        open(f"{flags}{r}-{name}", "w").close()
        while not os.path.exists(f"{flags}{r}-go"):
            time.sleep(0.001)
        s = AgentSessionsSession(f"new-{r}", where, key_file=key_file or None)
        asyncio.run(s.add_items([{"p": name, "k": 0}, {"p": name, "k": 1}]))
        print(s.uid, flush=True)
        s.close()
    """
)


def test_processes_creating_one_new_id_at_once_make_one_session(
    where: dict[str, Any], tmp_path: Path
) -> None:
    """Three processes add items to one *new* session id at the same instant, five rounds
    (a new id each): each round makes exactly one session, every process's items land in
    it whole and once, and every process reports its uid. On JetStream (no cross-host lock)
    too, with no retry here: opens racing on one session end with one writer, the others
    wait for it (never a writer fenced before or during its first commit)."""
    names, rounds, flags = ("a", "b", "c"), 5, str(tmp_path / "flag-")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [str(where["where"]), where.get("key_file") or "", flags, str(rounds)]
    command = [sys.executable, "-c", _CREATOR, argv[0]]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    procs = [subprocess.Popen([*command, name, *argv[1:]], env=env, **pipes) for name in names]
    try:
        for r in range(rounds):
            deadline = time.monotonic() + 120
            while not all(os.path.exists(f"{flags}{r}-{n}") for n in names):
                gone = [p for p in procs if p.poll() is not None]
                for p in gone:  # a creator that died says why
                    _, err = p.communicate()
                    raise AssertionError(f"round {r}: a creator exited {p.returncode}: {err!r}")
                assert time.monotonic() < deadline, f"round {r}: the creators never got ready"
                time.sleep(0.005)
            Path(f"{flags}{r}-go").touch()
        outs = [proc.communicate(timeout=180) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    for proc, (_, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err.decode()[-3000:]
    uids = [out.decode().split() for out, _ in outs]
    engine, _owned = engine_of(where["where"], where.get("key_file"))
    try:
        live = engine.list(project="openai-agents", page_size=100).sessions
        assert sorted(s.name for s in live) == [f"new-{r}" for r in range(rounds)]
        for r in range(rounds):
            found = engine.find(f"new-{r}", project="openai-agents")
            assert found is not None and {mine[r] for mine in uids} == {found.uid}
            items = asyncio.run(AgentSessionsSession(f"new-{r}", engine).get_items())
            want = [(n, k) for n in names for k in (0, 1)]
            assert sorted((x["p"], x["k"]) for x in items) == want  # both writes, once each
            for first, second in zip(items[::2], items[1::2], strict=True):
                assert first["p"] == second["p"] and (first["k"], second["k"]) == (0, 1)
    finally:
        engine.close()


def test_the_base_install_imports_no_framework() -> None:
    imports_no("agents")
