"""A writer process for crash tests: commits forever, printing each acknowledged commit.

Usage: python writer_proc.py HOME UID SEGMENT_MAX_BYTES SEED
Each line ``ACK <last_seq> <last_hash> <commit_id>`` is printed only after the store
returned, i.e. after the group was synced: the parent kills this process with SIGKILL at a
random moment and then checks that every acknowledged commit survived.
"""

from __future__ import annotations

import random
import sys

from agentsessions.journal.stores.file.store import FileStore, StoreOptions
from agentsessions.v1 import construct


def main() -> None:
    home, uid, seg_max, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(seed)
    store = FileStore(home, options=StoreOptions(segment_max_bytes=seg_max))
    with store.writer(uid) as writer:
        n = 0
        while True:
            n += 1
            events = [
                construct.input_event(
                    construct.text_message(
                        "user", f"{seed}-{n}-{i}-" + "x" * rng.randrange(0, 600)
                    ),
                    execution_id=f"{seed:08x}{n:08x}",
                )
                for i in range(rng.randrange(1, 9))
            ]
            cid = f"{seed}-{n}"
            result = writer.append(events, commit_id=cid)
            print(f"ACK {result.last_seq} {result.last_hash} {cid}", flush=True)


if __name__ == "__main__":
    main()
