"""``agentsessions view`` over ``--server`` (issue 23, section 3): the page is read through the
Sessions API, so a daemon's client draws the same page the local engine does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clirun import Cli
from needs import need
from test_cli_view import rich_session
from viewhtml import meta, rows

need("grpc", "grpc")

from test_serve import remote, served  # after the grpc check


def _same(page: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in page.items() if k != "generated"}  # when it was written


def test_the_page_over_server_is_the_local_page(cli: Cli, home: Path, tmp_path: Path) -> None:
    uid, child = rich_session(cli, tmp_path)
    cli.fast("view", uid, "-o", "local.html").ok()
    with served(home) as daemon:
        run = remote(daemon.address, cli.cwd, "view", uid, "-o", "remote.html", "--json")
        assert run.code == 0, run.err
        everything = remote(daemon.address, cli.cwd, "view", "--all", "-o", "site")
        assert everything.code == 0, everything.err
    local, served_page = cli.cwd / "local.html", cli.cwd / "remote.html"
    assert _same(meta(served_page)) == _same(meta(local))
    assert rows(served_page) == rows(local)
    assert meta(served_page)["stores"][0]["name"] == "notes"
    assert {p.name for p in (cli.cwd / "site").iterdir()} == {
        "index.html",
        f"{uid}.html",
        f"{child}.html",
    }
