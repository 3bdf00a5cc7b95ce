"""The guide's MCP example (docs/concepts/tools.md) runs as written, against the shipped server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from needs import need

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "concepts" / "tools.md").read_text()


def test_the_mcp_example_runs_as_written(tmp_path: Path) -> None:
    need("mcp", "mcp")
    (block,) = [
        b for b in re.findall(r"```bash\n(.*?)```", PAGE, flags=re.S) if "tools.mcpdemo" in b
    ]
    # no COLUMNS: `log` to a pipe draws one whole line per record, not wrapped to a width
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTSESSIONS_")}
    env.pop("COLUMNS", None)
    env["TMPDIR"] = str(tmp_path)
    env["PYTHONPATH"] = str(ROOT)  # `agentsessions` and the server run this checkout's code
    # `python3` and `agentsessions` are this interpreter's (the venv the tests run in)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (notes,) = tmp_path.glob("tmp.*/notes.txt")
    assert notes.read_text() == "buy milk\n"  # written once: the replay ran no tool
    results = [line for line in result.stdout.splitlines() if "TOOL_RESULT" in line]
    assert len(results) == 2, result.stdout
    assert "call-0-0" in results[0] and "call-0-1" in results[1], result.stdout
    assert "noted (1 note in notes.txt)" in result.stdout
    assert re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", result.stdout), result.stdout
    assert "buy milk\n" in result.stdout
