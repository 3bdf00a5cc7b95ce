"""The commit ids a tail remembers (journal/stores/tail.py): a tail read from a hint keeps the
hint's ids unparsed until a writer needs them, and remembers new ones beside them. Whatever
the order of remembering and reloading, it answers as a tail that parsed everything at once:
the newest ``COMMIT_IDS_REMEMBERED`` ids, oldest first, each with its first result."""

from __future__ import annotations

import json
from collections import OrderedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsessions.journal.stores import tail as tail_mod
from agentsessions.journal.stores.store import CommitResult
from agentsessions.journal.stores.tail import Tail

WINDOW = 6
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("remember"), st.integers(0, 30)),
        st.tuples(st.just("reload"), st.just(0)),
        st.tuples(st.just("lookup"), st.integers(0, 30)),
    ),
    max_size=60,
)


def _result(n: int) -> CommitResult:
    return CommitResult(n, n + 1, f"{n:064x}", 1, state_version=n % 3)


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_remembered_ids_match_an_eager_model(ops: list[tuple[str, int]]) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tail_mod, "COMMIT_IDS_REMEMBERED", WINDOW)
        tail, model = Tail(), OrderedDict[str, CommitResult]()
        for op, n in ops:
            cid = f"c{n}"
            if op == "remember":
                if cid in model:  # a writer never remembers a duplicate: it answers it
                    assert tail.duplicate(cid) is not None
                    continue
                tail.remember(cid, _result(n))
                model[cid] = _result(n)
                while len(model) > WINDOW:
                    model.popitem(last=False)
            elif op == "reload":  # a new reader of the hint this tail would write
                tail = Tail.from_json(json.loads(json.dumps(tail.to_json())))
            else:
                found = tail.duplicate(cid)
                assert (found is not None) == (cid in model)
                if found is not None:
                    assert found.first_seq == model[cid].first_seq and found.duplicate
        assert tail.to_json()["commits"] == [
            [c, r.first_seq, r.last_seq, r.last_hash, r.fence, r.state_version]
            for c, r in model.items()
        ]
        assert list(tail.commits.items()) == list(model.items())


def test_a_tail_read_from_a_hint_parses_no_commit_id_until_asked() -> None:
    full = Tail()
    for n in range(50):
        full.remember(f"c{n}", _result(n))
    read = Tail.from_json(json.loads(json.dumps(full.to_json())))
    read.remember("new", _result(99))  # a reader folding a commit: nothing parsed
    assert read._commit_rows is not None and list(read._commits) == ["new"]
    assert read.duplicate("c3") is not None  # a writer's check parses them, once
    assert read._commit_rows is None and list(read.commits)[-2:] == ["c49", "new"]
