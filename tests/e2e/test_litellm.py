"""The OpenAI-compatible provider against a real third-party server: LiteLLM's proxy.

The proxy (``tests/litellmproxy.py`` says why LiteLLM and where it comes from) answers
offline from its config (``tests/e2e/litellm/config.yaml``). Two proxies are started once
per test session (per xdist worker: each on its own free port, in its own directory): one
that every test shares, and one a test kills mid-call.

Covered: ``exec`` and a second turn through the CLI (which streams), usage in ``log`` and
``get``, ``replay --rerun`` with 0 requests reaching the server (counted in its access
log), non-streamed tool calls (the library's ``run``), error statuses (429, an unknown
model; a wrong key and an empty answer cannot be shown offline: without a database the proxy
answers a wrong key with HTTP 400 "No connected db", and an empty ``mock_response`` is no
mock, so it calls the upstream), a turn whose CLI process is killed mid-call and
resumed on the model it began with, and the server killed mid-call.

LiteLLM's limit: its ``mock_tool_calls`` are dropped when the answer is streamed (only the
mocked text comes), so the streamed tool-call path is covered by the fake server
(``tests/unit/test_openai_turns.py``), as is an empty answer.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from clirun import Cli, clean_env
from fake_openai import free_port
from litellmproxy import MASTER_KEY, Proxy, find_litellm, start
from needs import missing

from agentsessions.sessions.local import open_local
from agentsessions.sessions.values import DeltaFrame

pytestmark = [pytest.mark.litellm, pytest.mark.timeout(1200)]
KEY = {"MODEL_API_KEY": MASTER_KEY}


@pytest.fixture(scope="session")
def proxies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Proxy, Proxy]]:
    """(shared, victim): two LiteLLM proxies, started together once per session."""
    binary = find_litellm()
    if binary is None:
        missing(
            "litellm (a venv from tests/e2e/litellm/requirements.txt could not be made; or set "
            "AGENTSESSIONS_TEST_LITELLM to a litellm executable)",
            "dev",
        )
    base = tmp_path_factory.mktemp("litellm")
    with ThreadPoolExecutor(2) as pool:
        started = [pool.submit(start, binary, base / n, free_port()) for n in ("main", "victim")]
        made = [future.result() for future in started]
    try:
        yield made[0], made[1]
    finally:
        for proxy in made:
            proxy.stop()


@pytest.fixture
def litellm(proxies: tuple[Proxy, Proxy]) -> Proxy:
    return proxies[0]


@pytest.fixture(autouse=True)
def _no_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MODEL_API_KEY", "OPENAI_API_KEY", "MODEL_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def spec(proxy: Proxy, model: str) -> str:
    return f"openai:{model},base_url={proxy.url}"


def events(cli: Cli, uid: str) -> list[dict[str, Any]]:
    return [line["event"] for line in cli.fast("log", uid, "--json").ok().json_lines()]


def kinds(cli: Cli, uid: str) -> list[str]:
    return [str(e["kind"]).removeprefix("EVENT_") for e in events(cli, uid)]


def exec_in_background(cli: Cli, *args: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "agentsessions", "--home", str(cli.home), "exec", *args]
    return subprocess.Popen(
        argv, cwd=cli.cwd, env=clean_env(KEY), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def wait_for_input_record(proc: subprocess.Popen[str]) -> None:
    """Read the turn's record lines (stderr) until its INPUT: the model call comes next."""
    assert proc.stderr is not None
    for line in proc.stderr:
        if " INPUT " in line:
            return
    raise AssertionError(f"the turn ended before its INPUT was recorded (exit {proc.wait()})")


# --------------------------------------------------------------------------- turns


def test_exec_a_second_turn_usage_and_replay_with_no_request(litellm: Proxy, cli: Cli) -> None:
    uid = cli.create("--harness", "chat", "--model", spec(litellm, "mock-text"))
    before = litellm.requests()
    first = cli.fast("exec", uid, "-i", "hi", env=KEY).ok()
    assert first.out.strip() == "hello from litellm"
    second = cli.fast("exec", uid, "-i", "and again", env=KEY).ok()
    assert second.out.strip() == "hello from litellm"
    assert litellm.requests() == before + 2
    assert kinds(cli, uid) == [
        "EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "USAGE", "END",
    ] * 2  # fmt: skip
    usage = [e["usage"] for e in events(cli, uid) if e["kind"] == "EVENT_USAGE"]
    assert {u["model"] for u in usage} == {"mock-text"}  # the model's own name, not the spec
    got = cli.fast("get", uid, "--json").ok().json()["usage"]
    assert got["records"] == 2
    assert got["input_tokens"] == sum(int(u["input_tokens"]) for u in usage) > 0
    assert got["output_tokens"] == sum(int(u["output_tokens"]) for u in usage) > 0
    assert "model calls)" in cli.fast("get", uid).ok().out

    report = cli.fast("replay", uid, "--rerun", "--json").ok().json()
    assert report["model_calls"] == 0 and report["identical"] is True
    assert litellm.requests() == before + 2  # 0 requests reached the server


def test_the_library_streams_deltas_from_litellm(
    litellm: Proxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MODEL_API_KEY", MASTER_KEY)
    with open_local(tmp_path / "home") as engine:
        frames = list(
            engine.exec(None, ["hi"], harness="chat", model=spec(litellm, "mock-text")),
        )
    deltas = "".join(f.text for f in frames if isinstance(f, DeltaFrame))
    assert deltas == "hello from litellm"


def test_non_streamed_tool_calls_run_and_replay(
    litellm: Proxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MODEL_API_KEY", MASTER_KEY)
    log = tmp_path / "log.txt"
    tools = tmp_path / "tools.toml"
    tools.write_text(
        '[tools.append_line]\nmediation = "mediated"\nexecutor = "append_line"\n'
        f"config = {{ path = {json.dumps(str(log))} }}\n"
    )
    with open_local(tmp_path / "home") as engine:
        last = engine.run(
            None, ["log it"], harness="chat", model=spec(litellm, "mock-tools"), tools=tools
        )
        assert last.turn is not None
        said, logged = last.turn.outputs  # the tool's result reached the server and came back
        assert said == "calling append_line" and logged.startswith("logged: ")
        assert '"bytes":13' in logged
        uid = last.session.uid
        recorded = [str(r.event["kind"]).removeprefix("EVENT_") for r in engine.read(uid)]
        assert recorded == [
            "EXECUTION_START", "INPUT", "MODEL_CALL", "OUTPUT", "USAGE", "TOOL_CALL",
            "TOOL_RESULT", "MODEL_CALL", "OUTPUT", "USAGE", "END",
        ]  # fmt: skip
        assert log.read_text() == "from litellm\n"
        sent = litellm.requests()
        report = engine.rerun(uid)
        assert report.identical and report.model_calls == 0
        assert litellm.requests() == sent
        # streamed, LiteLLM drops its mocked tool calls (only the text comes): no tool runs
        frames = list(engine.exec(uid, ["log it again"], model=spec(litellm, "mock-tools")))
        turn = frames[-1].turn  # type: ignore[union-attr]
        assert turn is not None and turn.outputs == ("calling append_line",)
    assert log.read_text() == "from litellm\n"


# --------------------------------------------------------------------------- failures


@pytest.mark.parametrize(
    ("model", "key", "said", "hint"),
    [
        ("mock-ratelimit", MASTER_KEY, "HTTP 429", "rate limiting"),
        ("no-such-model", MASTER_KEY, "no-such-model", ""),
    ],
)
def test_an_error_fails_the_turn_with_the_servers_words_and_a_hint(
    litellm: Proxy, cli: Cli, model: str, key: str, said: str, hint: str
) -> None:
    uid = cli.create("--harness", "chat", "--model", spec(litellm, model))
    failed = cli.fast("exec", uid, "-i", "q", env={"MODEL_API_KEY": key})
    assert failed.code == 14, failed.err
    line = failed.err.strip().splitlines()  # the turn's record lines, then the error
    error = next(x for x in line if x.startswith("agentsessions: error:"))
    assert said in error and key not in failed.err
    if hint:
        assert any(x.startswith("  hint:") and hint in x for x in line), failed.err
    assert kinds(cli, uid)[-2:] == ["MODEL_CALL", "ERROR"]  # the failed call is audit


def test_a_turn_killed_mid_call_resumes_on_its_own_model(litellm: Proxy, cli: Cli) -> None:
    uid = cli.create("--harness", "chat", "--model", "echo")
    cli.fast("exec", uid, "-i", "on echo", env=KEY).ok()
    proc = exec_in_background(cli, uid, "--model", spec(litellm, "mock-slow"), "-i", "q")
    wait_for_input_record(proc)
    proc.send_signal(signal.SIGKILL)  # mock-slow answers after 8 s: the call is in flight
    proc.communicate()
    assert kinds(cli, uid)[-2:] == ["EXECUTION_START", "INPUT"]
    resumed = cli.fast("resume", uid, env=KEY).ok()
    assert "slow answer" in resumed.out  # on mock-slow, as it began; echo would say "q"
    assert kinds(cli, uid)[-4:] == ["MODEL_CALL", "OUTPUT", "USAGE", "END"]
    assert cli.fast("replay", uid, "--rerun", "--json").ok().json()["identical"] is True


def test_the_server_killed_mid_call_fails_the_turn(proxies: tuple[Proxy, Proxy], cli: Cli) -> None:
    victim = proxies[1]
    uid = cli.create("--harness", "chat", "--model", spec(victim, "mock-slow"))
    proc = exec_in_background(cli, uid, "-i", "q")
    wait_for_input_record(proc)
    victim.kill()
    _out, err = proc.communicate()
    assert proc.returncode == 14, err
    assert f"model endpoint {victim.url}/chat/completions" in err
    assert "  hint: " in err
    assert kinds(cli, uid)[-2:] == ["MODEL_CALL", "ERROR"]
    again = cli.fast("resume", uid, env=KEY)  # the server is gone: one clear line
    assert again.code == 14, again.err
    assert "unreachable: connection refused" in again.err
    assert "hint: check the model's base_url" in again.err
