"""The reply sinks: printed, appended to a file, POSTed (to a local stand-in for GitHub's
comment API), and the ``--reply`` specs that name them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from replyserver import ReplyServer

from agentsessions.cli.produceopts import reply_sink
from agentsessions.errors import InvalidArgumentError, UnavailableError
from agentsessions.producers.mapping import Thread
from agentsessions.producers.sinks import FileSink, PostSink, PrintSink, Reply

THREAD = Thread(
    "github", "o/r#3", "https://github.com/o/r/issues/3", {"owner": "o", "repo": "r", "number": "3"}
)
REPLY = Reply(THREAD, "sess-0123456789abcdef01234567", "exec-1", "It is fixed in 1.2.")


def test_print_writes_the_issue_and_the_answer_or_one_json_line() -> None:
    out = io.StringIO()
    PrintSink(out).send(REPLY)
    assert out.getvalue() == f"reply to o/r#3 ({REPLY.uid}):\nIt is fixed in 1.2.\n"
    out = io.StringIO()
    PrintSink(out, as_json=True).send(REPLY)
    assert json.loads(out.getvalue()) == REPLY.to_json()


def test_file_appends_one_json_line_per_answer(tmp_path: Path) -> None:
    sink = reply_sink(f"file:{tmp_path / 'replies.jsonl'}")
    assert isinstance(sink, FileSink)
    sink.send(REPLY)
    sink.send(REPLY)
    lines = (tmp_path / "replies.jsonl").read_text().splitlines()
    assert [json.loads(line)["text"] for line in lines] == [REPLY.text] * 2
    with pytest.raises(UnavailableError, match="cannot append the reply"):
        FileSink(tmp_path / "no-such-dir" / "replies.jsonl").send(REPLY)


def test_post_fills_the_address_into_the_url_and_sends_the_token() -> None:
    with ReplyServer() as api:
        PostSink(api.url, token="t").send(REPLY)
        (post,) = api.posts
    assert post.path == "/repos/o/r/issues/3/comments"
    assert post.body == {"body": "It is fixed in 1.2."}
    headers = {name.lower(): value for name, value in post.headers.items()}
    assert headers["authorization"] == "Bearer t"
    assert headers["user-agent"] and headers["x-github-api-version"] == "2022-11-28"


def test_a_refused_or_unreachable_post_is_one_clear_error() -> None:
    with ReplyServer(status=403) as api:
        with pytest.raises(UnavailableError, match=r"refused by .*HTTP 403"):
            PostSink(api.url).send(REPLY)
        port = api.server.server_address[1]
    with pytest.raises(UnavailableError, match="cannot POST the reply of sess-"):
        PostSink(f"http://127.0.0.1:{port}/x", timeout=5).send(REPLY)
    with pytest.raises(UnavailableError, match="names a field"):
        PostSink("http://127.0.0.1:1/{channel}").send(REPLY)


@pytest.mark.parametrize("spec", ["", "file:", "ftp://x", "printer"])
def test_an_unknown_reply_spec_is_refused(spec: str) -> None:
    with pytest.raises(InvalidArgumentError, match="invalid --reply"):
        reply_sink(spec)


def test_the_github_sink_needs_a_token() -> None:
    with pytest.raises(InvalidArgumentError, match="needs a token"):
        reply_sink("github")
    sink = reply_sink("github", token="t")
    assert isinstance(sink, PostSink)
    assert sink.target(THREAD) == "https://api.github.com/repos/o/r/issues/3/comments"
