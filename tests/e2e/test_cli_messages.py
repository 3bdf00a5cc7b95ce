"""Messages that point the right way (issue 17, section 3): the busy error names ``--wait``,
a retired harness is called retired, ``harness list`` has a header."""

from __future__ import annotations

import os

from clirun import Cli

from agentsessions.journal.stores.file.store import FileStore


def test_the_busy_error_names_wait(cli: Cli) -> None:
    uid = cli.fast("exec", "--input", "one", "--json").ok().json()["uid"]
    store = FileStore(cli.home)
    try:
        with store.writer(uid):
            busy = cli.run("exec", uid, "--input", "two").fails(6)
            assert f"pid {os.getpid()}" in busy.err
            assert "--wait SECONDS" in busy.err.splitlines()[1]
            other = cli.run("delete", uid, "--json").fails(6)
            assert "--wait" in other.json()["hint"]  # the JSON error carries the same hint
    finally:
        store.close()


def test_a_retired_harness_is_reported_retired_not_unknown(cli: Cli) -> None:
    cli.fast("harness", "register", "mychat", "--address", "unix:///tmp/nobody.sock").ok()
    cli.fast("harness", "retire", "mychat", "--reason", "moved").ok()
    run = cli.fast("exec", "--harness", "mychat", "--input", "hi").fails(2)
    assert "'mychat' is retired" in run.err and "moved" in run.err
    assert "unknown" not in run.err
    assert "harness register mychat" in run.err.splitlines()[1]


def test_harness_list_has_a_header(cli: Cli) -> None:
    # a process of its own: tests in this one register harnesses of their own
    lines = cli.run("harness", "list").ok().out.splitlines()
    assert lines[0].split() == ["name", "source", "state", "address"]
    assert [line.split()[0] for line in lines[1:]] == ["chat", "counter", "echo", "memory"]
