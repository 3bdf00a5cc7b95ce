"""A session is free again by the time its turn's last frame is read (sessions/turnstream.py).

A server streams a turn's frames as they come; a client that reads the last one may send
the session's next turn at once, with no wait. The worker that ran the turn used to release
the session's lock only after handing the last frame over, so a worker descheduled between
the two made that next turn fail as busy. The worker is held here at exactly that point.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import agentsessions
from agentsessions.sessions import turnstream
from agentsessions.sessions.values import SessionFrame


def test_the_next_turn_can_start_as_soon_as_the_last_frame_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    put = turnstream.TurnFrames.put

    def slow_after_the_last_frame(self: turnstream.TurnFrames, item: object) -> None:
        put(self, item)
        if isinstance(item, SessionFrame) and item.last:
            time.sleep(0.3)  # the worker descheduled right after handing it over

    monkeypatch.setattr(turnstream.TurnFrames, "put", slow_after_the_last_frame)
    with agentsessions.open(tmp_path / "home") as engine:
        uid, ended = "", 0
        for turn in range(3):
            frames = engine.exec(uid or None, [f"turn {turn}"], harness="echo", wait=0.0)
            for frame in frames:
                if isinstance(frame, SessionFrame) and frame.last:
                    uid, ended = frame.uid, ended + 1
                    break  # the caller goes on before the worker has returned
        assert ended == 3  # each next turn started with wait=0: none was refused as busy
        assert engine.get(uid).exec_state == "EXEC_COMPLETED"
