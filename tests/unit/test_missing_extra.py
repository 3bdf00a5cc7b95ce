"""A command whose optional package is not installed says which extra installs it, in one
line, exit 12 (a base install has no grpc: ``serve``, ``--server`` and ``harness serve``
crashed with a traceback); a missing module no extra provides is still a crash (a bug)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentsessions.cli.failures import missing_extra

ROOT = Path(__file__).resolve().parents[2]
# a base install, as far as the command can tell: importing grpc fails
BLOCK = """
import sys
class NoGrpc:
    def find_spec(self, name, path=None, target=None):
        if name == "grpc" or name.startswith("grpc."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, NoGrpc())
from agentsessions.cli.app import main
main(sys.argv[1:])
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["serve"],
        ["--server", "127.0.0.1:1", "list"],
        ["harness", "serve", "chat", "--listen", "127.0.0.1:0"],
    ],
    ids=["serve", "--server", "harness serve"],
)
def test_a_command_without_grpc_names_the_extra(argv: list[str], tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", BLOCK, "--home", str(tmp_path / "home"), *argv],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 12, result.stderr
    assert result.stderr.splitlines() == [
        "agentsessions: error: this command needs the 'grpc' package, which is not installed",
        "  hint: pip install 'agentsessions[grpc]'",
    ]


def test_only_optional_packages_are_mapped() -> None:
    err = missing_extra(ModuleNotFoundError("No module named 'nats'", name="nats.js"))
    assert err is not None and err.exit_code == 12 and "agentsessions[nats]" in err.hint
    assert missing_extra(ModuleNotFoundError("x", name="agentsessions.nothing")) is None
    assert missing_extra(ModuleNotFoundError("x")) is None  # no name: not ours to explain
