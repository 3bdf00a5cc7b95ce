"""A value class (``agentsessions.valueclass``) behaves as ``dataclasses.dataclass`` made
it: each behaviour a caller can see is held to a real dataclass twin of the same body."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import subprocess
import sys
from collections.abc import Mapping
from typing import Any, ClassVar

import msgspec
import pytest

from agentsessions.journal.format.logend import CheckedLinks, Position
from agentsessions.journal.stores.paging import PageAsk
from agentsessions.journal.stores.store import CommitResult, SessionInfo, SessionMeta
from agentsessions.journal.stores.tail import Tail
from agentsessions.sessions.session import Session
from agentsessions.valueclass import field, replace, value


@value(frozen=True)
class Frozen:
    """A frozen value."""

    uid: str
    n: int = 3
    labels: Mapping[str, str] = field(default_factory=dict)
    links: tuple[int, ...] | None = field(default=None, compare=False)
    hidden: str = field(default="h", repr=False)
    kind: ClassVar[str] = "frozen"


@dataclasses.dataclass(frozen=True)
class FrozenTwin:
    """A frozen value."""

    uid: str
    n: int = 3
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    links: tuple[int, ...] | None = dataclasses.field(default=None, compare=False)
    hidden: str = dataclasses.field(default="h", repr=False)
    kind: ClassVar[str] = "frozen"


@value
class Mutable:
    """A mutable value."""

    a: int = 0
    b: list[int] = field(default_factory=list)


@dataclasses.dataclass
class MutableTwin:
    """A mutable value."""

    a: int = 0
    b: list[int] = dataclasses.field(default_factory=list)


@value(frozen=True, slots=True)
class Slotted:
    """A slotted value."""

    a: int
    b: str = "x"


@dataclasses.dataclass(frozen=True, slots=True)
class SlottedTwin:
    """A slotted value."""

    a: int
    b: str = "x"


PAIRS = [(Frozen, FrozenTwin), (Mutable, MutableTwin), (Slotted, SlottedTwin)]
ARGS: dict[type, tuple[Any, ...]] = {
    Frozen: ("u", 4, {"k": "v"}, (1,)),
    Mutable: (5, [1]),
    Slotted: (7,),
}


def twin_args(cls: type) -> tuple[Any, ...]:
    return ARGS[cls]


def same_repr(mine: object, theirs: object) -> bool:
    return repr(mine) == repr(theirs).replace("Twin(", "(")


@pytest.mark.parametrize(("mine", "twin"), PAIRS, ids=lambda c: c.__name__)
def test_construction_repr_and_equality_match_a_dataclass(mine: type, twin: type) -> None:
    a, b = mine(*twin_args(mine)), twin(*twin_args(mine))
    assert same_repr(a, b)
    assert same_repr(mine(), twin()) if mine is Mutable else True
    assert a == mine(*twin_args(mine))
    assert a != b  # another class: NotImplemented both ways, as a dataclass
    assert (a == 1) is False
    assert mine.__match_args__ == twin.__match_args__
    assert [f.name for f in dataclasses.fields(mine)] == [f.name for f in dataclasses.fields(twin)]
    assert dataclasses.is_dataclass(mine) and dataclasses.is_dataclass(a)
    assert dataclasses.asdict(a) == dataclasses.asdict(b)
    assert dataclasses.astuple(a) == dataclasses.astuple(b)
    assert msgspec.json.encode(a) == msgspec.json.encode(b)
    # every option and every field as the twin's, on whichever Python runs this (the
    # classes behind them grow constructor parameters between versions)
    assert repr(mine.__dataclass_params__) == repr(twin.__dataclass_params__)
    mine_fields = {n: repr(f) for n, f in mine.__dataclass_fields__.items()}
    assert mine_fields == {n: repr(f) for n, f in twin.__dataclass_fields__.items()}


def test_hash_is_the_dataclass_hash_and_mutable_values_have_none() -> None:
    a, b = Frozen("u", 4, links=(1,)), FrozenTwin("u", 4, links=(1,))
    with pytest.raises(TypeError):  # a dict field: unhashable, as the twin
        hash(a)
    assert hash(Slotted(1)) == hash(SlottedTwin(1)) == hash((1, "x"))
    assert Mutable.__hash__ is None and MutableTwin.__hash__ is None
    assert Frozen("u", links=(1,)) == Frozen("u", links=(2,))  # compare=False ignored
    assert FrozenTwin("u", links=(1,)) == FrozenTwin("u", links=(2,))
    assert (a == b) is False


def test_defaults_stay_class_attributes_and_factories_make_fresh_values() -> None:
    assert Frozen.n == FrozenTwin.n == 3
    assert Frozen.links is None and Frozen.hidden == "h"
    assert not hasattr(Frozen, "labels") and not hasattr(FrozenTwin, "labels")
    assert Mutable().b is not Mutable().b
    assert Frozen.kind == "frozen" and "kind" not in Frozen.__match_args__


def test_frozen_values_refuse_assignment_with_the_dataclass_error() -> None:
    a = Frozen("u")
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'n'"):
        a.n = 4  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'n'"):
        del a.n  # type: ignore[misc]
    m = Mutable()
    m.a = 9
    assert m == Mutable(9)


def test_replace_copy_pickle_and_convert() -> None:
    a = Frozen("u", 4, links=(1,))
    assert replace(a, n=5) == dataclasses.replace(a, n=5) == Frozen("u", 5, links=(1,))
    assert replace(a, n=5).links == (1,)
    for made in (a, Mutable(3, [1]), Slotted(2)):
        assert pickle.loads(pickle.dumps(made)) == made
        assert copy.copy(made) == made and copy.deepcopy(made) == made
    assert msgspec.convert({"uid": "q"}, Frozen) == Frozen("q")
    assert msgspec.json.decode(b'{"a": 1}', type=Slotted) == Slotted(1)


def test_a_value_that_holds_itself_prints_as_a_dataclass_does() -> None:
    m, t = Mutable(), MutableTwin()
    m.b.append(m)  # type: ignore[arg-type]
    t.b.append(t)  # type: ignore[arg-type]
    assert same_repr(m, t)


def test_what_a_dataclass_refuses_a_value_class_refuses() -> None:
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):

        @value
        class Bad:
            a: int = 0
            b: int

    with pytest.raises(ValueError, match="mutable default"):

        @value
        class Shared:
            a: list[int] = []  # noqa: RUF012

    with pytest.raises(TypeError):
        Frozen()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Frozen("u", nope=1)  # type: ignore[call-arg]


def test_the_projects_values_print_compare_and_encode_as_before() -> None:
    meta = SessionMeta("sess-" + "0" * 24, name="n", labels={"a": "b"})
    info = SessionInfo(meta, last_seq=3)
    assert repr(meta).startswith("SessionMeta(uid='sess-000000000000000000000000', project=")
    assert info == SessionInfo(meta, last_seq=3) and info != SessionInfo(meta)
    assert dataclasses.replace(info, fence=2).fence == 2
    assert msgspec.json.decode(msgspec.json.encode(meta)) == dataclasses.asdict(meta)
    pos = Position(1, 2, 3, "h", 4, links=CheckedLinks((), (0, "")))
    assert pos == Position(1, 2, 3, "h", 4) and hash(pos) == hash((1, 2, 3, "h", 4))
    assert PageAsk("p", 2, None).limit == 3 and not hasattr(PageAsk("p", 2, None), "__dict__")
    assert CommitResult(1, 1, "h", 0).records == ()
    assert Tail().projection is not Tail().projection
    assert "_commit_rows" not in repr(Tail())
    assert dataclasses.is_dataclass(Session)


def test_making_the_projects_values_imports_no_dataclasses() -> None:
    code = (
        "import sys, agentsessions.journal.stores.store as s, agentsessions.sessions.session;"
        "s.SessionInfo(s.SessionMeta('u')) == s.SessionInfo(s.SessionMeta('u'));"
        "repr(s.SessionMeta('u')); hash(s.WorkingState());"
        "print('dataclasses' in sys.modules, 'inspect' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_signature_hash_false_and_post_init_as_a_dataclass() -> None:
    import inspect

    @value(frozen=True)
    class Tool:
        """A tool."""

        name: str
        schema: Mapping[str, Any] = field(default_factory=dict, hash=False)

        def __post_init__(self) -> None:
            if not self.name:
                raise ValueError("a name")

    @dataclasses.dataclass(frozen=True)
    class ToolTwin:
        """A tool."""

        name: str
        schema: Mapping[str, Any] = dataclasses.field(default_factory=dict, hash=False)

    assert str(inspect.signature(Tool)) == str(inspect.signature(ToolTwin))
    assert hash(Tool("t", {"a": 1})) == hash(ToolTwin("t", {"a": 1})) == hash(("t",))
    with pytest.raises(ValueError, match="a name"):
        Tool("")


def test_an_undocumented_value_is_documented_by_its_signature_as_a_dataclass() -> None:
    @value
    class Plain:
        a: int
        b: str = "x"
        c: list[int] = field(default_factory=list)

    @dataclasses.dataclass
    class PlainTwin:
        a: int
        b: str = "x"
        c: list[int] = dataclasses.field(default_factory=list)

    assert Plain.__doc__ == (PlainTwin.__doc__ or "").replace("PlainTwin", "Plain")
    from agentsessions.controller.counting import _Counted

    assert _Counted.__doc__ == "_Counted(owner: 'CountingModels', inner: 'ModelProvider')"


def test_the_shared_init_and_the_compiled_one_bind_alike_and_fail_alike() -> None:
    """The first COMPILE_AFTER constructions are served by the field list, the rest by the
    compiled ``__init__``: both bind as a dataclass does, and refuse in its words."""
    from agentsessions import valueclass

    @value(frozen=True)
    class Two:
        """Two."""

        a: int
        b: list[int] = field(default_factory=list)
        c: str = "c"

    @dataclasses.dataclass(frozen=True)
    class TwoTwin:
        """Two."""

        a: int
        b: list[int] = dataclasses.field(default_factory=list)
        c: str = "c"

    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((1,), {}),
        ((1, [2]), {}),
        ((1,), {"c": "x"}),
        ((), {"a": 1, "b": [3], "c": "y"}),
        ((1, [2], "z"), {}),
    ]
    bad: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((), {}),
        ((1, [], "c", 4), {}),
        ((1,), {"a": 2}),
        ((1,), {"d": 2}),
    ]
    for _ in range(valueclass.COMPILE_AFTER // len(calls) + 2):  # both sides of the switch
        for args, kwargs in calls:
            assert same_repr(Two(*args, **kwargs), TwoTwin(*args, **kwargs))
    assert getattr(Two.__init__, "__wrapped_build__", None) is None  # compiled by now
    for args, kwargs in bad:
        with pytest.raises(TypeError) as mine:
            Two(*args, **kwargs)
        with pytest.raises(TypeError) as theirs:
            TwoTwin(*args, **kwargs)
        assert str(mine.value) == str(theirs.value).replace("TwoTwin", "Two")


def test_a_fresh_class_refuses_a_bad_call_in_a_dataclass_words() -> None:
    @value
    class Fresh:
        """Fresh."""

        a: int

    @dataclasses.dataclass
    class FreshTwin:
        """Fresh."""

        a: int

    for args, kwargs in [((), {}), ((1, 2), {}), ((), {"b": 1})]:
        with pytest.raises(TypeError) as mine:
            Fresh(*args, **kwargs)
        with pytest.raises(TypeError) as theirs:
            FreshTwin(*args, **kwargs)
        assert str(mine.value) == str(theirs.value).replace("FreshTwin", "Fresh")
