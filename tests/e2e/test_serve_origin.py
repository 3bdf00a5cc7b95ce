"""Origins and input authors through a real ``serve`` with tokens, driven by the CLI's
``--server``: a producer token minted with ``--name-authors`` runs ``exec --origin
--actor`` (one session for the subject, the authors recorded as it names them), a plain
token is recorded as itself whatever ``--actor`` says, and ``list --origin`` finds the
session over the wire as locally."""

from __future__ import annotations

from pathlib import Path

from clirun import Cli, Run
from test_serve import served

ORIGIN = "source=github,subject=owner/repo#12"


def _as(address: str, token: str, cwd: Path, *args: str) -> Run:
    return Cli(cwd, cwd).fast("--server", address, "--token", token, *args, home=False)


def test_a_producer_token_names_authors_a_plain_one_is_itself(cli: Cli, tmp_path: Path) -> None:
    producer = cli.fast("token", "create", "-p", "gh", "--name", "hook", "--name-authors")
    relay = cli.fast("token", "create", "-p", "gh", "--name", "relay", "--json").ok().json()
    hook = producer.ok().out.strip()
    with served(cli.home, auth=True) as daemon:
        address, cwd = daemon.address, tmp_path
        first = _as(address, hook, cwd, "exec", "--origin", ORIGIN, "--actor",
                    "principal=octocat,issuer=github", "-i", "red build", "--harness", "echo",
                    "--json").ok().json()  # fmt: skip
        again = _as(address, relay["token"], cwd, "exec", "--origin", ORIGIN, "--actor",
                    "principal=octocat", "-i", "me too", "--json").ok().json()  # fmt: skip
        assert first["created"] and not again["created"] and again["uid"] == first["uid"]
        found = _as(address, hook, cwd, "list", "--origin", ORIGIN, "--json").ok().json()
        assert [s["uid"] for s in found["sessions"]] == [first["uid"]]
        log = _as(address, hook, cwd, "log", first["uid"], "--json").ok().json_lines()
        daemon.stop()
    actors = [r["event"].get("actor") for r in log if r["event"]["kind"] == "EVENT_INPUT"]
    assert actors == [
        {"principal": "octocat", "issuer": "github"},
        {"principal": "relay", "issuer": "agentsessions-token", "subject": relay["id"]},
    ]
