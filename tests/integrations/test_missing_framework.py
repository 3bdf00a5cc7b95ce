"""Importing an adapter without its framework is one ImportError naming the extra that
installs it (the bare error named a dependency of the framework, such as langchain_core),
and every extra it names is one pyproject.toml defines."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from agentsessions.integrations import EXTRAS

ROOT = Path(__file__).resolve().parents[2]
BLOCKED = {  # what to hide so the framework looks not installed
    "agentsessions.integrations.openai_agents": ("agents",),
    "agentsessions.integrations.langgraph": ("langchain_core", "langgraph"),
    "agentsessions.integrations.adk": ("google.adk",),
}


@pytest.mark.parametrize("module", sorted(EXTRAS))
def test_an_adapter_without_its_framework_names_its_extra(module: str) -> None:
    hide = "; ".join(f"sys.modules[{name!r}] = None" for name in BLOCKED[module])
    code = f"import sys; {hide}; import {module}"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    extra, framework = EXTRAS[module]
    assert last.startswith(f"ImportError: {module} needs {framework}, which is not installed")
    assert last.endswith(f"pip install 'agentsessions[{extra}]'")


def test_every_adapter_names_an_extra_of_the_package() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert {extra for extra, _ in EXTRAS.values()} <= set(extras)
    assert set(BLOCKED) == set(EXTRAS)
