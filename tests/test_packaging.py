"""Packaging as Python users expect it: the license, the metadata, the changelog, the extras.

Read from ``pyproject.toml`` as packaging tools read it (tomllib), not from an install.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import agentsessions

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# extras kept out of `dev` on purpose: bench's peers stay out of the project's environment
NOT_IN_DEV = {"bench", "dev"}


def _dev_extras() -> set[str]:
    """The extras ``dev`` installs through its self-reference ``agentsessions[a,b,...]``."""
    names: set[str] = set()
    for req in PROJECT["optional-dependencies"]["dev"]:
        match = re.fullmatch(r"agentsessions\[([\w,\s-]+)\]", req)
        if match:
            names |= {name.strip() for name in match.group(1).split(",")}
    return names


def test_dev_installs_every_extra_the_tests_exercise() -> None:
    extras = set(PROJECT["optional-dependencies"]) - NOT_IN_DEV
    assert extras, "no optional extras found"
    missing = extras - _dev_extras()
    assert not missing, f"add these extras to dev's agentsessions[...] line: {sorted(missing)}"
    assert not _dev_extras() - set(PROJECT["optional-dependencies"]), "dev names an unknown extra"


def test_the_test_runner_plugins_are_in_dev() -> None:
    names = {
        re.split(r"[<>=~!\[; ]", req, maxsplit=1)[0]
        for req in PROJECT["optional-dependencies"]["dev"]
    }
    assert {"pytest", "pytest-timeout", "pytest-xdist", "ruff", "mypy"} <= names


def test_the_license_file_is_the_declared_license() -> None:
    assert PROJECT["license"] == "Apache-2.0"
    assert PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert not any("License ::" in c for c in PROJECT["classifiers"])  # the SPDX field rules


def test_the_metadata_names_authors_urls_and_classifiers() -> None:
    assert PROJECT["authors"] and all(a.get("name") for a in PROJECT["authors"])
    urls = PROJECT["urls"]
    assert {"Homepage", "Source", "Issues", "Changelog"} <= set(urls)
    assert all(url.startswith("https://") for url in urls.values())
    classifiers = PROJECT["classifiers"]
    assert "Typing :: Typed" in classifiers
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert PROJECT["version"] == agentsessions.__version__
    assert (ROOT / "agentsessions" / "py.typed").exists()


def test_the_changelog_has_an_unreleased_section_and_this_version() -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert headings[0] == "Unreleased"
    assert agentsessions.__version__ in headings
    for name in headings:  # every heading has its link at the foot, as Keep a Changelog has
        assert re.search(rf"^\[{re.escape(name)}\]: https://", text, re.M), name
