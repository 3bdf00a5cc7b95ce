"""A command group run without its subcommand answers with its help, and no empty error."""

from __future__ import annotations

import pytest

from tests.e2e.clirun import Cli


@pytest.mark.parametrize("group", ["compute", "token", "harness"])
def test_a_group_without_its_command_prints_its_help_and_no_empty_error(
    cli: Cli, group: str
) -> None:
    run = cli.fast(group)
    assert run.code == 2
    assert "Usage: agentsessions " + group in run.out + run.err
    assert "error: \n" not in run.err and not run.err.rstrip().endswith("error:"), run.err
