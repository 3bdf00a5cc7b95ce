"""The OpenAI Agents SDK's own session tests, run with our ``AgentSessionsSession`` in place of
``SQLiteSession`` (issue 19, part 1 "Check"), on the file store, encrypted and on JetStream.

The tests are the SDK's, never copied here: the SDK's source distribution (which ships
``tests/``) is fetched once with ``pip download --no-binary :all: --no-deps
openai-agents==0.24.0``, checked against :data:`SDIST_SHA256`, and unpacked under
``~/.cache/agentsessions-tests`` (``suites.py``; ``AGENTSESSIONS_TEST_OPENAI_AGENTS_SDIST``
may name the tarball instead, for offline machines). The SDK's test dependencies that our
environment lacks (pytest-asyncio, pytest-mock) are installed beside it. A pytest
subprocess then runs the files in :data:`SESSION_FILES` (on each store) and
:data:`RUNNER_FILES` (the Runner's soft-cancel and tool-failure history tests, on the file
store: they test the Runner, not the store) with our plugin ``openai_agents_shim.py``
(``-p``), which puts our class behind the SDK's ``SQLiteSession`` name before any test
module imports it.

Left out (:data:`LEFT_OUT`), all about SQLite's own internals, which our class does not have:
per-thread ``sqlite3`` connections and their reaping (``_connections``,
``_get_connection``), the class-level file lock table (``_file_lock_counts``), rows written
corrupt straight into the SQLite file (``_locked_connection``), SQLite write-lock rollback
probes (a ``sqlite3.connect`` probe of the ``agent_sessions`` table), connection eviction and
close retries, and the post-commit cancellation test, which pauses a ``sqlite3.Connection``
subclass inside ``commit``. The semantics those last ones check (nothing half written, a
failed write leaves the session usable) are our own tests' (``test_openai_agents_session.py``).
From ``tests/extensions/memory/test_encrypt_session.py`` (the SDK's EncryptedSession wrapping
ours) the tests of its atomic authenticate-then-pop and of its compaction snapshot are left
out: EncryptedSession takes those paths only for an instance of the SDK's own SQLiteSession
class (private ``_pop_item_with_validation`` / ``_get_compaction_snapshot``), and some probe
the SQLite file; any other backend, ours included, gets the legacy path its docstring
describes. The Runner's soft-cancel and tool-failure history tests run whole.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from needs import need

need("agents", "openai-agents")

from stores import store_environment
from suites import prepare, run_suite

VERSION = "0.24.0"
SDIST_SHA256 = "4b4b285f4fed81fdf1b4ac426a9101658d9cd29b4fb1aaeee18f639b77e704e3"
TEST_DEPS = ("pytest-asyncio==1.5.0", "pytest-mock==3.17.0")
ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SESSION_FILES = (  # on every store
    "tests/memory/test_session.py",
    "tests/memory/test_session_limit.py",
    "tests/extensions/memory/test_encrypt_session.py",  # EncryptedSession wrapping ours
)
RUNNER_FILES = (  # the Runner's use of a session: on the file store only (CPU; no store in it)
    "tests/test_soft_cancel.py",
    "tests/test_tool_failure_boundaries.py",
    "tests/test_native_tool_failure_history.py",
    "tests/test_tool_batch_failure_history.py",
)
# tests of the files that must pass: all but LEFT_OUT (the session files' 111 include the
# SDK's SQLAlchemySession test under EncryptedSession: dev installs sqlalchemy, for ADK's)
PASSED = {"session": 111, "runner": 169}
LEFT_OUT = (
    "test_sqlite_session_close_closes_worker_thread_connections",
    "test_sqlite_session_reaps_connections_from_exited_worker_threads",
    "test_sqlite_session_closes_retired_connections_before_the_next_allocation",
    "test_sqlite_session_keeps_connections_of_live_worker_threads",
    "test_sqlite_session_pop_item_skips_corrupt_most_recent",
    "test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows",
    "test_sqlite_session_get_items_limit_skips_corrupt_newest_rows",
    "test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows",
    "test_sqlite_session_file_lock_is_shared_across_instances",
    "test_sqlite_session_failed_add_items_releases_write_lock",
    "test_sqlite_session_failed_clear_session_rolls_back",
    "test_sqlite_session_failed_pop_item_releases_write_lock",
    "test_sqlite_session_rollback_failure_evicts_connection",
    "test_sqlite_session_close_retries_quarantined_connection",
    "test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome",
    # EncryptedSession's atomic authenticate-then-pop and compaction snapshot use private
    # hooks it calls only on the SDK's own SQLiteSession class (``_pop_item_with_validation``,
    # ``_get_compaction_snapshot``); any other backend gets its documented legacy path
    "test_encrypted_compaction_skips_unencrypted_stored_history",
    "test_encrypted_pop_wrong_key_preserves_recoverable_history",
    "test_encrypted_pop_rechecks_authentication_after_expired_tail",
    "test_encrypted_pop_authentication_is_atomic_with_concurrent_mutations",
    "test_encrypted_pop_wrong_key_preserves_row_identity",
    "test_encrypted_pop_cancellation_waits_for_authentication_rollback",
)


@pytest.fixture
def store_env(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """The environment that picks the store (and master key) the engine opens."""
    return store_environment(request.param, tmp_path, request, tag="oa")


@pytest.mark.parametrize(
    ("store_env", "files"),
    [
        ("file", "session"),
        ("encrypted", "session"),
        ("jetstream", "session"),
        ("file", "runner"),
    ],
    indirect=["store_env"],
)
def test_the_sdks_session_tests_pass_with_our_session(
    store_env: dict[str, str], files: str, tmp_path: Path
) -> None:
    root = prepare("openai-agents", VERSION, SDIST_SHA256, TEST_DEPS)
    env: dict[str, Any] = {
        **store_env,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE), str(root / "_deps"), str(root)]),
        "TMPDIR": str(tmp_path),  # the SDK's tests' temporary databases, and our homes
    }
    chosen = SESSION_FILES if files == "session" else RUNNER_FILES
    keep = " and ".join(f"not {name}" for name in LEFT_OUT)
    config = ("--rootdir", str(root), "-c", str(root / "pyproject.toml"))
    shim = ("-p", "openai_agents_shim")  # our SQLiteSession, before any test module imports
    run_suite(
        [*shim, *config, "-k", keep, *chosen],
        root,
        env,
        PASSED[files],
        "agentsessions-shim: N sessions",
    )
