"""A driver process for the memory-harness crash test: one turn after another, forever.

Usage: python memory_proc.py HOME UID
Turn ``i`` tells the memory harness ``remember fact-i`` on the default runtime (a warm host
keeps the harness); each line ``ACK <i> <state version>`` is printed only after the turn
returned, i.e. after its END (and the state committed with it) was synced. The parent
kills this process with SIGKILL after a few acknowledgements, wherever it then is.
"""

from __future__ import annotations

import sys
from pathlib import Path

from agentsessions.journal.stores.file.store import FileStore
from agentsessions.sessions.wiring import build_controller
from agentsessions.v1 import construct


def main() -> None:
    home, uid = Path(sys.argv[1]), sys.argv[2]
    store = FileStore(home)
    controller = build_controller(store, home, keep_writers=1)
    i = 0
    while True:
        i += 1
        controller.exec(uid, [dict(construct.text_message("user", f"remember fact-{i}"))])
        writer = controller.writers.get(uid)
        version = writer.state.version if writer is not None else store.state(uid).version
        print(f"ACK {i} {version}", flush=True)


if __name__ == "__main__":
    main()
