"""The daemon's heap settings (:mod:`agentsessions.server.memory`): when ``serve``
restarts itself with glibc's per-thread caches off, and when it leaves the environment
alone."""

from __future__ import annotations

import platform

import pytest

from agentsessions.server import memory


def test_glibc_gets_its_per_thread_caches_turned_off() -> None:
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc only")
    env = memory.tuned_environ({"PATH": "/bin"})
    assert env == {"PATH": "/bin", "GLIBC_TUNABLES": "glibc.malloc.tcache_count=0"}


def test_an_operators_tunables_are_kept_and_a_restart_happens_once() -> None:
    # set by the operator (any value), or by the restart itself: nothing to do
    assert memory.tuned_environ({"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}) is None
    assert memory.tuned_environ({"GLIBC_TUNABLES": memory.TUNABLES}) is None


def test_another_c_library_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "libc_ver", lambda: ("", ""))
    assert memory.tuned_environ({"PATH": "/bin"}) is None
