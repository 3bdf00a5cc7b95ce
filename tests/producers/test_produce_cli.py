"""``agentsessions produce github`` as an operator runs it: a real process on a real port,
deliveries signed by the test, a local stand-in for GitHub's comment API; the receiver
SIGKILLed mid-turn and started again (the turn resumes, the answer is posted once)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from needs import need
from replyserver import ReplyServer

import agentsessions
from agentsessions.producers.send import comment_event, deliver

SECRET = "s3cret, from the webhook's settings"
SUBJECT = "octo-org/hello-world#7"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTSESSIONS_")}
    env.update(AGENTSESSIONS_HOME=str(home), AGENTSESSIONS_GITHUB_SECRET=SECRET)
    return env


class ReceiverProcess:
    """``produce github`` in a process of its own; its address once it listens."""

    started: ClassVar[list[subprocess.Popen[str]]] = []

    def __init__(self, home: Path, *args: str, server: Path | None = None) -> None:
        remote = ["--server", f"unix://{server}"] if server else []
        argv = [sys.executable, "-m", "agentsessions", *remote, "produce", "github"]
        argv += ["--runtime", "local"]
        self.proc = subprocess.Popen(
            [*argv, "--listen", "127.0.0.1:0", *args],
            env=_env(home),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        ReceiverProcess.started.append(self.proc)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line.startswith("{"):  # --json: {"address": ...}
            self.address = json.loads(line)["address"]
        else:
            if not line.startswith("listening on "):
                self.proc.kill()
                pytest.fail(f"the receiver did not start: {line}{self.proc.communicate()[1]}")
            self.address = line.split()[-1]

    def stop(self) -> tuple[str, str]:
        """SIGTERM, as a supervisor stops it; its stdout and stderr after the first line."""
        self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=120)
        assert self.proc.returncode == 0, err
        return out, err

    def kill(self) -> None:
        self.proc.kill()
        self.proc.communicate(timeout=60)


@pytest.fixture(autouse=True)
def _no_receiver_outlives_its_test() -> Iterator[None]:
    before = set(ReceiverProcess.started)
    yield
    for proc in set(ReceiverProcess.started) - before:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=60)


@pytest.fixture
def github_api() -> Iterator[ReplyServer]:
    with ReplyServer() as server:
        yield server


def test_help_explains_the_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "agentsessions", "produce", "github", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "100"},
        check=True,
    ).stdout
    for needle in ("X-Hub-Signature-256", "--secret-file", "--reply", "202", "resume"):
        assert needle in out


def test_no_secret_is_refused_before_anything_is_opened(tmp_path: Path) -> None:
    env = _env(tmp_path / "home")
    del env["AGENTSESSIONS_GITHUB_SECRET"]
    done = subprocess.run(
        [sys.executable, "-m", "agentsessions", "produce", "github"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("agentsessions: error: no webhook secret")
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize(("action", "answers"), [("created", 1), ("edited", 0)])
def test_a_receiver_killed_mid_turn_resumes_it_and_answers_once(
    tmp_path: Path, github_api: ReplyServer, action: str, answers: int
) -> None:
    """A new comment's cut turn is answered once after the restart; an edit's (quiet, the
    default --on-edit) is completed and not answered, as it would not have been."""
    home = tmp_path / "home"
    model = "scripted:seed=3,delay=3"  # the model is still answering when the kill comes
    first = ReceiverProcess(home, "--model", model, "--reply", github_api.url)
    previous = "Is it fixed?" if action == "edited" else None
    payload = comment_event(
        SUBJECT, author="mona", body="Is this fixed?", action=action, previous=previous
    )
    sent = deliver(first.address, "issue_comment", payload, SECRET.encode(), delivery_id="d-1")
    assert sent.status == 202 and sent.body["status"] == "recorded"  # the INPUT is durable
    first.kill()
    uid = sent.body["session"]
    with agentsessions.open(home, runtime="local") as engine:
        assert engine.get(uid).busy  # cut off mid-turn
    second = ReceiverProcess(home, "--reply", github_api.url)
    if answers:
        github_api.wait_for(answers)
    again = deliver(second.address, "issue_comment", payload, SECRET.encode(), delivery_id="d-1")
    assert again.status == 202 and again.body["duplicate"]  # GitHub's redelivery of it
    _, err = second.stop()
    assert "completing 1 turn(s)" in err and f"resumed the turn cut off in {uid}" in err
    with agentsessions.open(home, runtime="local") as engine:
        records = list(engine.read(uid))
        assert not engine.get(uid).busy
    kinds = [r.event["kind"] for r in records]
    assert kinds.count("EVENT_INPUT") == 1 and kinds.count("EVENT_END") == 1
    outputs = [
        r.event["message"]["parts"][0]["text"]["text"]
        for r in records
        if r.event["kind"] == "EVENT_OUTPUT"
    ]
    assert [p.body for p in github_api.posts] == [{"body": outputs[0]}] * answers  # once
    assert {p.path for p in github_api.posts} <= {"/repos/octo-org/hello-world/issues/7/comments"}


def test_the_print_sink_prints_each_answer_with_its_issue(tmp_path: Path) -> None:
    receiver = ReceiverProcess(tmp_path / "home", "--model", "scripted:seed=1", "--json")
    for n, author in enumerate(("mona", "hubot")):
        payload = comment_event(SUBJECT, author=author, body=f"comment {n}", comment_id=n + 1)
        assert deliver(receiver.address, "issue_comment", payload, SECRET.encode()).status == 202
    out, _ = receiver.stop()
    replies = [json.loads(line) for line in out.splitlines()]
    assert [r["subject"] for r in replies] == [SUBJECT, SUBJECT]
    assert all(r["text"].startswith("scripted-1-") for r in replies)


def test_the_receiver_works_on_a_served_daemon_too(tmp_path: Path) -> None:
    """With --server the producer's sessions live in the daemon's store: the origin, the
    commit id and each input's author cross the wire (a --no-auth daemon keeps authors)."""
    need("grpc", "grpc")
    home, sock = tmp_path / "home", tmp_path / "d.sock"
    daemon = subprocess.Popen(
        [sys.executable, "-m", "agentsessions", "serve", "--runtime", "local", "--no-auth",
         "--listen", f"unix://{sock}"],
        env=_env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    ReceiverProcess.started.append(daemon)
    assert daemon.stdout is not None and daemon.stdout.readline().startswith("listening on")
    receiver = ReceiverProcess(tmp_path / "unused", "--model", "scripted:seed=2", server=sock)
    payload = comment_event(SUBJECT, author="mona", body="Over the wire?")
    for _ in range(2):  # a delivery and GitHub's redelivery of it
        sent = deliver(receiver.address, "issue_comment", payload, SECRET.encode(), delivery_id="w")
        assert sent.status == 202
    assert sent.body["duplicate"]
    out, _ = receiver.stop()
    assert out.count(f"reply to {SUBJECT}") == 1
    daemon.send_signal(signal.SIGTERM)
    daemon.communicate(timeout=60)
    with agentsessions.open(home, runtime="local") as engine:
        session = engine.find(origin={"source": "github", "subject": SUBJECT})
        assert session is not None
        inputs = [r.event for r in engine.read(session.uid) if r.event["kind"] == "EVENT_INPUT"]
    assert [i["actor"]["principal"] for i in inputs] == ["mona"]
    assert not (tmp_path / "unused").exists()  # nothing local was opened
