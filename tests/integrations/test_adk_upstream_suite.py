"""ADK's own ``tests/unittests/sessions/test_session_service.py``, run with our service in
place of ADK's, when a copy of that file is given (issue 19, part 3 "Check").

ADK's source distribution ships no tests and CI cannot reach GitHub, so the file cannot be
fetched at test time: set ``AGENTSESSIONS_TEST_ADK_SESSION_TESTS`` to a copy of it (from
google/adk-python at commit :data:`COMMIT`, checked against :data:`FILE_SHA256`) and this
test runs it in a pytest subprocess with our plugin ``adk_shim.py`` (``-p``), which makes
every service the file asks for ours, on the file store, encrypted and JetStream. Without
the variable it is skipped; ``adk_upstream.md`` records the run made when the adapter was
written, and ``test_adk_session_service.py`` keeps each test's assertions, ported to ADK
2.13, on every store in every run.

Left out (:data:`LEFT_OUT`): the file predates ADK 2.x, whose base ``append_event`` keeps
``temp:`` keys on the caller's session object for the rest of the invocation; two of its
tests assert they are absent there, and fail on ADK 2.13's own in-memory service the same
way (temp keys are never persisted: ``test_adk_session_service.py`` asserts that part).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from needs import need

need("google.adk", "adk")

from stores import store_environment
from suites import install, run_suite

COMMIT = "bf27f22a9534279b942bb8047d747effc9e7dd7a"  # the file's last change in the snapshot
FILE_SHA256 = "21c0826981107af59e9efac69ab8f5b5d2d7f0b4569f0f87ccb0dd56d924d4f4"
TEST_DEPS = ("pytest-asyncio==1.5.0",)
LEFT_OUT = ("test_session_state", "test_create_new_session_will_merge_states")
PASSED = 12  # 6 tests x the file's 2 service types, each ours
ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The given copy of ADK's file (checked) with the asyncio plugin beside it."""
    named = os.environ.get("AGENTSESSIONS_TEST_ADK_SESSION_TESTS")
    if not named:
        pytest.skip("AGENTSESSIONS_TEST_ADK_SESSION_TESTS names no copy of ADK's file")
    data = Path(named).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    assert digest == FILE_SHA256, f"{named}: sha256 {digest}, expected {FILE_SHA256}"
    work = tmp_path_factory.mktemp("upstream")
    (work / "tests").mkdir(parents=True)
    (work / "tests" / "test_session_service.py").write_bytes(data)
    (work / "pytest.ini").write_text("[pytest]\nasyncio_mode = strict\n")
    install(TEST_DEPS, work / "_deps")
    return work


@pytest.mark.parametrize("store", ["file", "encrypted", "jetstream"])
def test_adks_session_service_tests_pass_with_our_service(
    upstream: Path, store: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    env = store_environment(store, tmp_path, request, tag="adk")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE), str(upstream / "_deps")])
    env["TMPDIR"] = str(tmp_path)
    keep = " and ".join(f"not {name}" for name in LEFT_OUT)
    config = ("--rootdir", str(upstream), "-c", str(upstream / "pytest.ini"))
    shim = ("-p", "pytest_asyncio", "-p", "adk_shim")  # the file's asyncio marks; our service
    run_suite(
        [*shim, *config, "-k", keep, "tests/test_session_service.py"],
        upstream,
        env,
        PASSED,
        "agentsessions-shim: N services",
    )
