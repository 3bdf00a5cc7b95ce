"""An ``mcp:`` tool is offered to the model as its server lists it (issue 17 section 7).

A workload that gives an ``mcp:`` tool no ``description`` or ``parameters`` offers the
model the server's description and input schema (the workload's own fields win); the
listing is written into the workload the turn records (``[listed.NAME]``), so
``replay --rerun`` offers the same without starting the server, and a listing that changes
between turns is on the record (skipped without the mcp extra).
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from needs import need

from agentsessions.controller.spi import Completion, ModelRequest
from agentsessions.models import MODELS
from agentsessions.sessions.local import open_local
from agentsessions.tools.listing import with_listing
from agentsessions.tools.workload import parse_workload
from agentsessions.v1 import construct, workloadref
from tests.toolservers import MCP_SERVER

need("mcp", "mcp")


class Probe:
    """A model that asks for ``append`` once per turn, then answers; keeps the tools each
    request offered."""

    offered: ClassVar[list[list[dict[str, Any]]]] = []

    def complete(
        self, request: ModelRequest, on_delta: Callable[[str], None] | None = None
    ) -> Completion:
        Probe.offered.append([dict(t) for t in request.tools])
        if request.messages[-1]["role"] == "user":
            call = {"id": f"c{len(Probe.offered)}", "tool": "append", "args": {"line": "x"}}
            part: Any = {"tool_call": call}
            return Completion(message=dict(construct.message("assistant", part)))
        return Completion(message=dict(construct.text_message("assistant", "done")))


@pytest.fixture(autouse=True, scope="module")
def _registered() -> Iterator[None]:
    """The probe model for this module only (other modules list the known names)."""
    MODELS.register("listing-probe", Probe)
    yield
    MODELS.unregister("listing-probe")


def _setup(tmp_path: Path, table: str = "") -> tuple[Path, Path, Path]:
    """A copy of the test server (removed later: replay must not start it), an --about
    file, and a workload naming the server's ``append`` with ``table`` lines of its own."""
    server = tmp_path / "server.py"
    shutil.copy(MCP_SERVER, server)
    about = tmp_path / "about.txt"
    about.write_text("Append one line (listing 1).", encoding="utf-8")
    spec = f"mcp:{sys.executable} {server} {tmp_path / 'effects.txt'} --about {about}"
    tools = tmp_path / "tools.toml"
    tools.write_text(f'[tools.append]\nmediation = "mediated"\nexecutor = "{spec}"\n{table}')
    return server, about, tools


def _append(offer: list[dict[str, Any]]) -> dict[str, Any]:
    (found,) = [t for t in offer if t["name"] == "append"]
    return found


def test_the_server_listing_is_offered_recorded_and_replayed_without_the_server(
    tmp_path: Path,
) -> None:
    server, about, tools = _setup(tmp_path)
    Probe.offered = []
    with open_local(tmp_path / "home") as engine:
        first = engine.run(inputs=["go"], harness="chat", model="listing-probe", tools=tools)
        uid = first.uid
    offered = _append(Probe.offered[0])
    assert offered["description"] == "Append one line (listing 1)."
    assert offered["input_schema"]["properties"]["line"]["type"] == "string"
    assert offered["input_schema"]["required"] == ["line"]
    assert all(_append(o) == offered for o in Probe.offered)  # every request of the turn
    assert (tmp_path / "effects.txt").read_text() == "x\n"  # the call went to the server

    # the server lists another description in a later process: that turn offers it, and
    # its record says so (another workload digest), the first turn's record unchanged
    about.write_text("Append one line (listing 2).", encoding="utf-8")
    Probe.offered = []
    with open_local(tmp_path / "home") as engine:
        engine.run(uid, ["again"], tools=tools)
        starts = [r.event for r in engine.read(uid) if r.event["kind"] == "EVENT_EXECUTION_START"]
        texts = [engine.store.workload_at(uid, _digest(e)) for e in starts]  # type: ignore[attr-defined]
    assert _append(Probe.offered[0])["description"] == "Append one line (listing 2)."
    assert "(listing 1)" in texts[0] and "(listing 2)" in texts[1]
    assert all('[listed."append"]' in t for t in texts)

    server.unlink()  # replay starts no server: one that cannot start would show
    Probe.offered = []
    with open_local(tmp_path / "home") as engine:
        report = engine.rerun(uid)
    assert report.identical and report.model_calls == 0 and report.replayed == 2
    assert Probe.offered == []
    assert (tmp_path / "effects.txt").read_text() == "x\nx\n"


def _digest(start: Any) -> str:
    import base64

    raw = start["execution_start"].get("config", "")
    return workloadref.split(base64.b64decode(raw))[1]


def test_the_workloads_own_fields_win_over_the_listing(tmp_path: Path) -> None:
    own = 'description = "Mine."\nparameters = { type = "object" }\n'
    _server, _about, tools = _setup(tmp_path, own)
    Probe.offered = []
    with open_local(tmp_path / "home") as engine:
        engine.run(inputs=["go"], harness="chat", model="listing-probe", tools=tools)
    assert _append(Probe.offered[0]) == {
        "name": "append",
        "description": "Mine.",
        "input_schema": {"type": "object"},
    }
    # only a missing field is taken from the server
    _server, _about, tools = _setup(tmp_path, 'description = "Mine."\n')
    workload = parse_workload(tools.read_text())
    try:
        listed = parse_workload(with_listing(workload))
    finally:
        workload.close()
    assert listed.tools["append"].description == "Mine."
    assert listed.tools["append"].parameters["required"] == ["line"]
    assert listed.listed == ("append",)


def test_a_listed_table_is_checked_and_a_server_that_does_not_start_adds_none() -> None:
    text = '[tools.t]\nmediation = "mediated"\nexecutor = "mcp:nosuchcmd"\n'
    with pytest.raises(Exception, match=r"\[listed.u\] names no \[tools.NAME\]"):
        parse_workload(text + '[listed.u]\ndescription = "d"\n')
    with pytest.raises(Exception, match=r"\[listed.t\] parameters: must be a JSON object"):
        parse_workload(text + '[listed.t]\nparameters = "[1]"\n')
    parsed = parse_workload(text + "[listed.t]\nparameters = '{\"default\": null}'\n")
    assert parsed.tools["t"].parameters == {"default": None}
    workload = parse_workload(text)
    try:
        assert with_listing(workload) == text  # nosuchcmd: the bind reports it, as before
    finally:
        workload.close()


def test_a_listing_with_awkward_text_round_trips_as_toml() -> None:
    from agentsessions.tools import listing

    awkward = 'quote " back \\ tab \t nl \n del \x7f ünï 😀'
    assert json.loads(listing._string(awkward)) == awkward
    parsed = parse_workload(
        '[tools.t]\nmediation = "mediated"\nexecutor = "mcp:x"\n'
        f'[listed."t"]\ndescription = {listing._string(awkward)}\n'
    )
    assert parsed.tools["t"].description == awkward
