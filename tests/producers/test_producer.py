"""The GitHub producer on a real engine (a file home), a real receiver and a local stand-in
for GitHub's comment API: deliveries signed by the test, as GitHub signs them, in GitHub's
payload shapes (tests/producers/payloads/). The receiver killed mid-turn is in
test_produce_cli.py (a real process, a real kill)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from replyserver import ReplyServer
from test_github_webhooks import recorded

import agentsessions
from agentsessions.producers.github import GitHubEndpoint
from agentsessions.producers.lanes import Producer, ProducerSettings
from agentsessions.producers.receiver import MAX_BODY, Receiver
from agentsessions.producers.send import Sent, comment_event, deliver
from agentsessions.producers.sinks import PostSink, Reply
from agentsessions.sessions.api import Sessions

SECRET = b"a webhook secret"
SUBJECT = "octo-org/hello-world#7"


@dataclass
class Rig:
    """An engine, a producer on it, its receiver, and what the producer logged."""

    engine: Sessions
    producer: Producer
    receiver: Receiver
    lines: list[str] = field(default_factory=list)

    def send(self, event: str, payload: dict[str, Any] | bytes, **kw: Any) -> Sent:
        return deliver(self.receiver.address, event, payload, SECRET, **kw)

    def comment(self, body: str, *, author: str = "mona", issue: str = SUBJECT) -> Sent:
        return self.send("issue_comment", comment_event(issue, author=author, body=body))

    def session(self, issue: str = SUBJECT) -> Any:
        return self.engine.find(origin={"source": "github", "subject": issue})

    def events(self, uid: str, kind: str) -> list[dict[str, Any]]:
        return [r.event for r in self.engine.read(uid) if r.event["kind"] == kind]

    def stop(self) -> None:
        """Stop as the command does: the receiver, then the lanes (turns end, replies go)."""
        self.receiver.close()
        self.producer.close()


@pytest.fixture
def rig_of(tmp_path: Path) -> Iterator[Any]:
    made: list[tuple[Rig, Any]] = []

    def make(sink: Any, model: str = "scripted:seed=1", **settings: Any) -> Rig:
        engine = agentsessions.open(tmp_path / "home", runtime="local")
        lines: list[str] = []
        producer = Producer(
            engine,
            sink,
            ProducerSettings(harness="chat", model=model, wait=30.0, **settings),
            log=lines.append,
        )
        receiver = Receiver("127.0.0.1:0", GitHubEndpoint(producer, SECRET)).start()
        rig = Rig(engine, producer, receiver, lines)
        made.append((rig, engine))
        return rig

    yield make
    for rig, engine in made:
        rig.receiver.close()
        rig.producer.close()
        engine.close()


@pytest.fixture
def github_api() -> Iterator[ReplyServer]:
    with ReplyServer() as server:
        yield server


def test_githubs_recorded_payloads_become_turns_and_comments(
    rig_of: Any, github_api: ReplyServer
) -> None:
    rig = rig_of(PostSink(github_api.url, token="t0ken"))
    opened = rig.send("issues", recorded("issues.opened"), delivery_id="d-opened")
    assert opened.status == 202 and opened.body["status"] == "recorded"
    commented = rig.send("issue_comment", recorded("issue_comment.created"))
    assert commented.status == 202
    assert commented.body["session"] == opened.body["session"]  # one issue, one session
    posts = github_api.wait_for(2)
    rig.stop()
    uid = opened.body["session"]
    inputs = rig.events(uid, "EVENT_INPUT")
    assert [i["message"]["parts"][0]["text"]["text"].split(":")[0] for i in inputs] == [
        f"mona opened issue {SUBJECT}",
        f"hubot commented on {SUBJECT}",
    ]
    outputs = [o["message"]["parts"][0]["text"]["text"] for o in rig.events(uid, "EVENT_OUTPUT")]
    assert [p.body for p in posts] == [{"body": text} for text in outputs]
    assert {p.path for p in posts} == {"/repos/octo-org/hello-world/issues/7/comments"}
    assert posts[0].headers["Authorization"] == "Bearer t0ken"
    assert posts[0].headers["X-Agentsessions-Session"] == uid
    session = rig.engine.get(uid)
    assert session.labels == {"agentsessions.producer": "github"}
    assert session.origin == {
        "source": "github",
        "subject": SUBJECT,
        "uri": "https://github.com/octo-org/hello-world/issues/7",
        "attributes": {"owner": "octo-org", "repo": "hello-world", "number": "7"},
    }
    authors = [i["actor"] for i in rig.events(uid, "EVENT_INPUT")]
    assert authors == [
        {"principal": "mona", "issuer": "https://github.com", "subject": "583231"},
        {"principal": "hubot", "issuer": "https://github.com", "subject": "7402213"},
    ]


@pytest.mark.parametrize("signature", [None, "sha256=" + "0" * 64, "forged"])
def test_a_forged_or_missing_signature_is_401_and_writes_nothing(
    rig_of: Any, github_api: ReplyServer, signature: str | None
) -> None:
    rig = rig_of(PostSink(github_api.url))
    payload = json.dumps(recorded("issues.opened")).encode()
    if signature is None:
        import http.client

        conn = http.client.HTTPConnection(*rig.receiver.address.split(":"))
        conn.request("POST", "/", body=payload, headers={"X-GitHub-Event": "issues"})
        status = conn.getresponse().status
        conn.close()
    else:
        status = rig.send("issues", payload, signature=signature).status
    assert status == 401
    # signed with another secret: as forged as a made-up signature
    assert deliver(rig.receiver.address, "issues", payload, b"not the secret").status == 401
    rig.stop()
    assert rig.engine.list().sessions == ()


def test_the_bots_own_comment_is_never_a_turn(rig_of: Any, github_api: ReplyServer) -> None:
    rig = rig_of(PostSink(github_api.url))
    sent = rig.send("issue_comment", recorded("issue_comment.created.bot"))
    assert (sent.status, sent.body["status"]) == (202, "ignored")
    assert rig.send("ping", {"zen": "Keep it logically awesome."}).status == 200
    rig.stop()
    assert rig.engine.list().sessions == () and github_api.posts == []


def test_a_comment_storm_on_one_issue_runs_every_turn_once_in_order(
    rig_of: Any, github_api: ReplyServer
) -> None:
    rig = rig_of(PostSink(github_api.url))
    bodies = [f"comment {n}" for n in range(12)]
    answers: list[Sent] = []
    senders = [
        threading.Thread(target=lambda b=b: answers.append(rig.comment(b, author=f"user{b[-1]}")))
        for b in bodies
    ]
    for t in senders:
        t.start()
    for t in senders:
        t.join()
    assert sorted(a.status for a in answers) == [202] * 12
    posts = github_api.wait_for(12)
    rig.stop()
    uid = rig.session().uid
    records = list(rig.engine.read(uid))
    recorded_bodies = [
        r.event["message"]["parts"][0]["text"]["text"].split("\n\n", 1)[1]
        for r in records
        if r.event["kind"] == "EVENT_INPUT"
    ]
    assert sorted(recorded_bodies) == sorted(bodies)  # each once, none lost
    acked = sorted(a.body["seq"] for a in answers)
    assert acked == [r.seq for r in records if r.event["kind"] == "EVENT_INPUT"]
    kinds = [r.event["kind"] for r in records]
    turn = ["EVENT_EXECUTION_START", "EVENT_INPUT", "EVENT_MODEL_CALL", "EVENT_OUTPUT"]
    assert kinds == [*turn, "EVENT_END"] * 12  # serialised: no turn inside another
    assert len(posts) == 12 and len({p.body["body"] for p in posts}) == 12


class GatedSink:
    """Holds the reply of ``held`` until released: its lane cannot move on meanwhile."""

    def __init__(self, held: str) -> None:
        self.held, self.release = held, threading.Event()
        self.sent: list[Reply] = []
        self.arrived = threading.Condition()

    def send(self, reply: Reply) -> None:
        if reply.thread.subject == self.held:
            assert self.release.wait(60)
        with self.arrived:
            self.sent.append(reply)
            self.arrived.notify_all()


def test_two_issues_run_in_parallel_lanes(rig_of: Any) -> None:
    sink = GatedSink(held="octo-org/hello-world#1")
    rig = rig_of(sink)
    first = rig.comment("first issue", issue="octo-org/hello-world#1")
    second = rig.comment("second issue", issue="octo-org/hello-world#2")
    assert first.status == second.status == 202
    with sink.arrived:  # issue 2 answered while issue 1's lane is still held
        assert sink.arrived.wait_for(lambda: len(sink.sent) == 1, 60)
    assert sink.sent[0].thread.subject == "octo-org/hello-world#2"
    sink.release.set()
    rig.stop()
    assert [r.thread.subject for r in sink.sent] == [
        "octo-org/hello-world#2",
        "octo-org/hello-world#1",
    ]
    assert first.body["session"] != second.body["session"]


def test_a_failed_turn_is_acknowledged_and_leaves_the_session_resumable(
    rig_of: Any, github_api: ReplyServer, tmp_path: Path
) -> None:
    script = tmp_path / "one-answer.txt"
    script.write_text("the only answer\n")
    rig = rig_of(PostSink(github_api.url), model=f"scripted:file={script}")
    assert rig.comment("one").status == 202
    github_api.wait_for(1)
    failing = rig.comment("two")  # the script has no answer left: the turn fails
    assert failing.status == 202 and failing.body["status"] == "recorded"
    rig.stop()
    session = rig.session()
    assert session.exec_state == "EXEC_FAILED" and not session.busy
    assert len(rig.events(session.uid, "EVENT_INPUT")) == 2  # the input stayed
    assert [p.body["body"] for p in github_api.posts] == ["the only answer"]
    assert any(f"agentsessions resume {session.uid}" in line for line in rig.lines)


@pytest.mark.parametrize(("policy", "replies"), [("quiet", 1), ("reply", 2)])
def test_an_edit_is_recorded_as_an_input_of_its_own(
    rig_of: Any, github_api: ReplyServer, policy: str, replies: int
) -> None:
    rig = rig_of(PostSink(github_api.url), on_edit=policy)
    assert rig.send("issue_comment", recorded("issue_comment.created")).status == 202
    edited = rig.send("issue_comment", recorded("issue_comment.edited"))
    assert (edited.status, edited.body["status"]) == (202, "recorded")
    rig.stop()
    inputs = rig.events(rig.session().uid, "EVENT_INPUT")
    assert len(inputs) == 2  # the original stays as it was: nothing is rewritten
    assert inputs[0]["message"]["parts"][0]["text"]["text"].startswith("hubot commented")
    assert inputs[1]["message"]["parts"][1]["data"]["data"]["previous_body"] == (
        "Which Python version?"
    )
    assert len(github_api.posts) == replies


def test_edits_can_be_ignored(rig_of: Any, github_api: ReplyServer) -> None:
    rig = rig_of(PostSink(github_api.url), on_edit="ignore")
    sent = rig.send("issue_comment", recorded("issue_comment.deleted"))
    assert (sent.status, sent.body["status"]) == (202, "ignored")
    rig.stop()
    assert rig.engine.list().sessions == ()


def test_a_turn_the_engine_refuses_is_503_with_no_input_written(
    rig_of: Any, github_api: ReplyServer
) -> None:
    rig = rig_of(PostSink(github_api.url), model="no-such-provider:x")
    sent = rig.comment("hello")
    assert sent.status == 503 and "no-such-provider" in sent.body["error"]
    rig.stop()
    assert all(s.last_seq == 0 for s in rig.engine.list().sessions)


def test_the_receiver_speaks_plain_http_and_a_unix_socket(
    rig_of: Any, github_api: ReplyServer, tmp_path: Path
) -> None:
    import http.client

    rig = rig_of(PostSink(github_api.url))
    host, port = rig.receiver.address.split(":")
    for method, headers, status in [
        ("GET", {}, 405),
        ("POST", {"Content-Length": str(MAX_BODY + 1)}, 413),
        ("POST", {"Transfer-Encoding": "chunked"}, 411),
    ]:
        conn = http.client.HTTPConnection(host, int(port))
        conn.putrequest(method, "/")
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders()
        assert conn.getresponse().status == status
        conn.close()
    sock = tmp_path / "hook.sock"
    with Receiver(f"unix://{sock}", GitHubEndpoint(rig.producer, SECRET)):
        sent = deliver(f"unix://{sock}", "issues", recorded("issues.opened"), SECRET)
        assert sent.status == 202
    assert not sock.exists()
    rig.stop()


def test_a_redelivered_webhook_lands_once_and_is_answered_once(
    rig_of: Any, github_api: ReplyServer
) -> None:
    rig = rig_of(PostSink(github_api.url))
    payload = recorded("issue_comment.created")
    first = rig.send("issue_comment", payload, delivery_id="72d3162e-cc78-11e3-81ab-4c9367dc0958")
    github_api.wait_for(1)
    again = rig.send("issue_comment", payload, delivery_id="72d3162e-cc78-11e3-81ab-4c9367dc0958")
    assert first.status == again.status == 202
    assert not first.body["duplicate"] and again.body["duplicate"]
    assert again.body["seq"] == first.body["seq"] and again.body["session"] == first.body["session"]
    # GitHub redelivers with the same id and body, and so does someone replaying it at once
    storm = [
        threading.Thread(
            target=rig.send, args=("issue_comment", payload), kwargs={"delivery_id": "x"}
        )
        for _ in range(4)
    ]
    for t in storm:
        t.start()
    for t in storm:
        t.join()
    rig.stop()
    assert len(rig.events(first.body["session"], "EVENT_INPUT")) == 2  # the first, and "x"
    assert len(github_api.posts) == 2  # one answer each
    assert sum("a redelivery" in line for line in rig.lines) == 4  # 1 + the storm's 3


def test_stopping_waits_for_deliveries_in_flight_not_for_idle_connections(
    rig_of: Any, github_api: ReplyServer
) -> None:
    import http.client

    from agentsessions.producers.github import sign

    rig = rig_of(PostSink(github_api.url))
    body = json.dumps(recorded("issues.opened")).encode()
    host, port = rig.receiver.address.split(":")
    idle = http.client.HTTPConnection(host, int(port))  # HTTP/1.1: kept alive after
    headers = {
        "X-GitHub-Event": "issues",
        "X-GitHub-Delivery": "d-idle",
        "X-Hub-Signature-256": sign(body, SECRET),
    }
    idle.request("POST", "/", body=body, headers=headers)
    answer = idle.getresponse()
    assert answer.status == 202 and answer.getheader("Connection") != "close"
    answer.read()
    rig.stop()  # returns although the connection is still open, idle
    idle.close()
    assert len(github_api.posts) == 1  # the turn in flight finished and was answered


def test_a_signed_but_malformed_delivery_is_400_and_writes_nothing(
    rig_of: Any, github_api: ReplyServer
) -> None:
    import http.client

    from agentsessions.producers.github import sign

    rig = rig_of(PostSink(github_api.url))
    assert rig.send("issue_comment", b"{not json").status == 400
    broken = recorded("issue_comment.created")
    del broken["comment"]["user"]
    refused = rig.send("issue_comment", broken)
    assert refused.status == 400 and "comment.user" in refused.body["error"]
    body = json.dumps(recorded("issues.opened")).encode()
    host, port = rig.receiver.address.split(":")
    conn = http.client.HTTPConnection(host, int(port))  # no X-GitHub-Delivery: no commit id
    conn.request(
        "POST", "/", body, {"X-GitHub-Event": "issues", "X-Hub-Signature-256": sign(body, SECRET)}
    )
    assert conn.getresponse().status == 400
    conn.close()
    rig.stop()
    assert rig.engine.list().sessions == ()
