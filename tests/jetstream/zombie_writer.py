"""A writer process for the SIGSTOP fencing test: open, append, wait, append again.

argv: store URL, session uid. Prints ``ready SEQ`` after its first commit, then waits for a
line on stdin (the test pauses and resumes it meanwhile) and prints ``fenced`` if its next
append is refused as superseded, ``appended SEQ`` if it landed.
"""

from __future__ import annotations

import sys

from agentsessions.errors import FencedError
from agentsessions.journal.stores.jetstream.conn import JetStreamOptions
from agentsessions.journal.stores.jetstream.store import JetStreamStore
from agentsessions.v1 import construct


def main() -> None:
    url, uid = sys.argv[1], sys.argv[2]
    store = JetStreamStore(JetStreamOptions.parse(url))
    say = construct.input_event(construct.text_message("user", "zombie"), execution_id="e1")
    with store.writer(uid) as w:
        r = w.append([say])
        print(f"ready {r.last_seq}", flush=True)
        sys.stdin.readline()
        try:
            again = w.append([say], expected_last_seq=w.head[0])
        except FencedError:
            print("fenced", flush=True)
        else:
            print(f"appended {again.last_seq}", flush=True)
    store.close()


if __name__ == "__main__":
    main()
