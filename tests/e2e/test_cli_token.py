"""``agentsessions token create/list/revoke`` as a user runs them: the token is printed once,
the home keeps only its hash, the commands need no grpc, bad input is one line and a
documented exit code."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from clirun import Cli, clean_env

from agentsessions.sessions.tokens import TokenStore


def _every_byte_under(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file())


def test_create_prints_the_token_once_and_the_home_keeps_only_its_hash(
    cli: Cli, home: Path
) -> None:
    made = cli.fast("token", "create", "--project", "acme", "--name", "ci").ok()
    token = made.out.strip()
    assert made.out == token + "\n" and token.startswith("agst_")
    token_id = token.split("_")[1]
    assert made.err == f"created token {token_id} (ci) for acme; it is shown only once\n"
    assert token.encode() not in _every_byte_under(home)
    assert token.split("_", 2)[2].encode() not in _every_byte_under(home)
    assert stat.S_IMODE(os.stat(home / "tokens.json").st_mode) == 0o600
    listed = cli.fast("token", "list").ok()
    assert token_id in listed.out and "acme" in listed.out and "active" in listed.out
    assert token not in listed.out and token not in cli.fast("token", "list", "--json").out
    assert TokenStore(home).authenticate(token).principal == "ci"  # what the server checks


def test_create_json_and_list_json(cli: Cli) -> None:
    made = cli.fast("token", "create", "-p", "a", "-p", "b", "--expires", "30d", "--json").ok()
    obj = made.json()
    assert obj["token"].startswith("agst_") and obj["projects"] == ["a", "b"]
    assert obj["expires_ns"] - obj["created_ns"] == 30 * 86400 * 10**9
    (row,) = cli.fast("token", "list", "--json").ok().json()["tokens"]
    assert "token" not in row and "sha256" not in row
    assert (row["id"], row["state"], row["principal"]) == (
        obj["id"],
        "active",
        f"token-{obj['id']}",
    )


def test_create_admin_is_kept_and_listed(cli: Cli) -> None:
    made = cli.fast("token", "create", "-p", "a", "--admin", "--json").ok().json()
    plain = cli.fast("token", "create", "-p", "a", "--json").ok().json()
    assert (made["admin"], plain["admin"]) == (True, False)
    rows = {r["id"]: r["admin"] for r in cli.fast("token", "list", "--json").ok().json()["tokens"]}
    assert rows == {made["id"]: True, plain["id"]: False}
    table = cli.fast("token", "list").ok().out.splitlines()
    assert "admin" in table[0].split()
    line = next(row for row in table if made["id"] in row)
    assert " yes " in line and " no " in next(row for row in table if plain["id"] in row)
    assert "--admin" in cli.fast("token", "create", "--help").ok().out


def test_revoke(cli: Cli, home: Path) -> None:
    token = cli.fast("token", "create", "-p", "a").ok().out.strip()
    token_id = token.split("_")[1]
    assert (
        cli.fast("token", "revoke", token_id).ok().out
        == f"revoked token {token_id} (token-{token_id})\n"
    )
    assert cli.fast("token", "list", "--json").ok().json()["tokens"][0]["state"] == "revoked"
    assert cli.fast("token", "revoke", token_id).ok()  # again: nothing changes
    cli.fast("token", "revoke", "0123456789ab").fails(3)


def test_bad_input_is_one_line_and_exit_2(cli: Cli, home: Path) -> None:
    cli.fast("token", "create").fails(2)  # no --project
    assert "invalid project name" in cli.fast("token", "create", "-p", "a/b").fails(2).err
    assert (
        "invalid duration" in cli.fast("token", "create", "-p", "a", "--expires", "1y").fails(2).err
    )
    assert not (home / "tokens.json").exists()


def test_a_damaged_token_file_exits_8_and_is_left_alone(cli: Cli, home: Path) -> None:
    (home / "tokens.json").write_text("{oops")
    err = cli.fast("token", "list").fails(8).err
    assert "tokens.json is not a token file" in err
    cli.fast("token", "create", "-p", "a").fails(8)
    assert (home / "tokens.json").read_text() == "{oops"


def test_token_commands_import_no_grpc(cli: Cli) -> None:
    probe = (
        "import sys\n"
        "from agentsessions.cli.app import main\n"
        "try:\n    main(sys.argv[1:])\n"
        "except SystemExit as e:\n    code = e.code\n"
        "assert not [m for m in sys.modules if m.startswith(('grpc', 'google.protobuf'))]\n"
        "sys.exit(code)\n"
    )
    for args in (["token", "create", "-p", "a"], ["token", "list"]):
        proc = subprocess.run(
            [sys.executable, "-c", probe, "--home", str(cli.home), *args],
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
