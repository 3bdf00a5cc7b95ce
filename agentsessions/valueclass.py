"""Value classes that behave as ``dataclasses.dataclass`` makes them, without its import.

Why: every command starts by importing the modules it runs on, and the value classes
there cost the start twice. ``import dataclasses`` pulls ``inspect`` (``ast``, ``dis``,
``tokenize``...), and each ``@dataclass`` writes its ``__init__``, ``__repr__``, ``__eq__``,
``__hash__`` and frozen ``__setattr__``/``__delattr__`` as source and compiles each with
``exec`` as the module is imported, whether the command ever builds one or not.

:func:`value` makes the same class with no compiling at import:

- ``__init__`` is the code ``dataclasses`` would generate (the same statements, so a
  construction costs the same), compiled the first time the class is constructed;
- ``__repr__``, ``__eq__``, ``__hash__`` and the frozen guards are shared functions driven
  by the class's field names (the same results: ``Name(a=1, b='x')``, tuples compared
  and hashed, ``dataclasses.FrozenInstanceError`` with the same words);
- ``__dataclass_fields__`` and ``__dataclass_params__`` are built, importing
  ``dataclasses``, the first time anything asks, so ``dataclasses.fields``, ``replace``,
  ``asdict``, ``is_dataclass`` and msgspec see the dataclass they saw before.

Supported: ``frozen``, ``slots``, ``__post_init__`` and fields with ``default``,
``default_factory``, ``repr``, ``compare`` and ``hash`` (:func:`field`); ``eq`` is always
on and ``order`` always off, as every class here uses them. Anything else is refused when
the class is made, never silently changed. ``tests/unit/test_valueclass.py`` holds each
behaviour to a real dataclass's.
"""

from __future__ import annotations

from _thread import get_ident
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

_C = TypeVar("_C", bound=type)
_V = TypeVar("_V")


class _Missing:
    """No default given (``dataclasses.MISSING``'s role, without its import)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
_FACTORY: Any = type("_HAS_DEFAULT_FACTORY", (), {"__repr__": lambda self: "<factory>"})()


class Field:
    """One field as :func:`field` declares it and :func:`value` records it."""

    __slots__ = (
        "classvar",
        "compare",
        "default",
        "default_factory",
        "hash",
        "name",
        "repr",
        "type",
    )

    def __init__(
        self, default: Any, default_factory: Any, repr: bool, compare: bool, hash: bool | None
    ) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.type: Any = None
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare
        self.hash = hash
        self.classvar = False


@overload
def field(
    *, default: _V, repr: bool = True, compare: bool = True, hash: bool | None = None
) -> _V: ...
@overload
def field(
    *,
    default_factory: Callable[[], _V],
    repr: bool = True,
    compare: bool = True,
    hash: bool | None = None,
) -> _V: ...
@overload
def field(*, repr: bool = True, compare: bool = True, hash: bool | None = None) -> Any: ...
def field(
    *,
    default: Any = MISSING,
    default_factory: Any = MISSING,
    repr: bool = True,
    compare: bool = True,
    hash: bool | None = None,
) -> Any:
    """A field with a default, a default factory, or left out of ``repr``, comparisons or
    the hash (``hash=None``: hashed when compared, as dataclasses)."""
    return Field(default, default_factory, repr, compare, hash)


@overload
def value(cls: _C, /) -> _C: ...
@overload
def value(*, frozen: bool = False, slots: bool = False) -> Callable[[_C], _C]: ...
@dataclass_transform(field_specifiers=(field,))
def value(cls: Any = None, /, *, frozen: bool = False, slots: bool = False) -> Any:
    """``@dataclass`` (or ``@dataclass(frozen=..., slots=...)``) without ``dataclasses``."""

    def wrap(cls: type) -> type:
        return _make(cls, frozen, slots)

    return wrap if cls is None else wrap(cls)


def replace(obj: _V, /, **changes: Any) -> _V:
    """A copy of ``obj`` with ``changes``: ``dataclasses.replace`` without its import."""
    names = getattr(type(obj), "__value_init__", None)
    if names is None:  # a plain dataclass: its own replace
        from dataclasses import replace as replace_dataclass

        return replace_dataclass(obj, **changes)  # type: ignore[type-var]
    for name in names:
        if name not in changes:
            changes[name] = getattr(obj, name)
    return type(obj)(**changes)


def _make(cls: type, frozen: bool, slots: bool) -> type:
    fields = _collect(cls)
    live = [f for f in fields if not f.classvar]
    if slots:
        cls = _with_slots(cls, live, frozen)
    for f in live:  # dataclasses keeps a default as the class attribute, drops a field()
        if not slots and isinstance(cls.__dict__.get(f.name), Field):
            if f.default is MISSING:
                delattr(cls, f.name)
            else:
                setattr(cls, f.name, f.default)
    names = tuple(f.name for f in live)
    cls.__value_fields__ = tuple(fields)  # type: ignore[attr-defined]
    cls.__value_init__ = names  # type: ignore[attr-defined]
    cls.__value_frozen__ = frozen  # type: ignore[attr-defined]
    cls.__value_slots__ = slots  # type: ignore[attr-defined]
    _set(cls, "__init__", _shared_init(cls))
    _set(cls, "__repr__", _lazy(cls, "__repr__", _compile_repr))
    _set(cls, "__eq__", _lazy(cls, "__eq__", _compile_eq))
    if "__hash__" not in cls.__dict__ or cls.__dict__["__hash__"] is None:
        # dataclasses' rule for eq without unsafe_hash: frozen hashes its fields, else None
        hashing = _lazy(cls, "__hash__", _compile_hash) if frozen else None
        cls.__hash__ = hashing  # type: ignore[assignment]
    if frozen:
        for name, guard in (("__setattr__", _frozen_set(cls)), ("__delattr__", _frozen_del(cls))):
            if name in cls.__dict__:
                raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
            setattr(cls, name, guard)
    _set(cls, "__match_args__", names)
    if cls.__doc__ is None:  # dataclasses documents an undocumented class by its signature
        cls.__doc__ = cls.__name__ + _signature_text(live)
    cls.__dataclass_fields__ = _Lazy("__dataclass_fields__", _dataclass_fields)  # type: ignore[attr-defined]
    cls.__dataclass_params__ = _Lazy("__dataclass_params__", _dataclass_params)  # type: ignore[attr-defined]
    cls.__signature__ = _Lazy("__signature__", _settle_init)  # type: ignore[attr-defined]
    return cls


def _signature_text(fields: list[Field]) -> str:
    """``(a: 'int', b: 'str' = 'x')``: the constructor's signature as ``inspect`` prints it."""
    out = []
    for f in fields:
        kind = repr(f.type) if isinstance(f.type, str) else getattr(f.type, "__qualname__", "")
        text = f"{f.name}: {kind}" if kind else f.name
        if f.default_factory is not MISSING:
            text += " = <factory>"
        elif f.default is not MISSING:
            text += f" = {f.default!r}"
        out.append(text)
    return f"({', '.join(out)})"


def _collect(cls: type) -> list[Field]:
    """The fields of ``cls``: its value bases' first, then its own annotations in order."""
    by_name: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:-1]):  # every class but itself and object
        for f in base.__dict__.get("__value_fields__", ()):
            by_name[f.name] = f
        if "__dataclass_fields__" in base.__dict__ and "__value_fields__" not in base.__dict__:
            raise TypeError(f"{cls.__name__}: a value class cannot extend the dataclass {base}")
    # the class's own annotations, as dataclasses reads them (inspect is what we avoid)
    own = cls.__dict__
    for name, kind in own.get("__annotations__", {}).items():
        default = own.get(name, MISSING)
        f = default if type(default) is Field else Field(default, MISSING, True, True, None)
        f.name, f.type = name, kind
        text = kind if type(kind) is str else getattr(kind, "__name__", "")
        if "Var" in text:  # ClassVar, InitVar: the only annotations dataclasses treats apart
            f.classvar = text.startswith(("ClassVar", "typing.ClassVar"))
            if text.startswith(("InitVar", "dataclasses.InitVar")):
                raise TypeError(f"{cls.__name__}.{name}: InitVar is not supported here")
        if not f.classvar and isinstance(f.default, _MUTABLE):
            raise ValueError(f"mutable default {type(f.default)} for field {name} is not allowed")
        by_name[name] = f
    seen_default = False
    for f in by_name.values():
        if f.classvar:
            continue
        if f.default is not MISSING or f.default_factory is not MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
    return list(by_name.values())


_MUTABLE = (list, dict, set)


def _set(cls: type, name: str, fn: Any) -> None:
    """Add ``fn`` unless the class body defined its own (as dataclasses does)."""
    if name not in cls.__dict__:
        setattr(cls, name, fn)


def _with_slots(cls: type, fields: list[Field], frozen: bool) -> type:
    """``cls`` made again with ``__slots__`` for its fields (dataclasses' ``slots=True``)."""
    body = dict(cls.__dict__)
    names = tuple(f.name for f in fields)
    inherited = {s for base in cls.__mro__[1:-1] for s in base.__dict__.get("__slots__", ())}
    body["__slots__"] = tuple(n for n in names if n not in inherited)
    for name in (*names, "__dict__", "__weakref__"):
        body.pop(name, None)
    made = type(cls)(cls.__name__, cls.__bases__, body)
    made.__qualname__ = cls.__qualname__
    if frozen:  # as dataclasses: a frozen slotted class pickles by its field values
        _set(made, "__getstate__", _getstate)
        _set(made, "__setstate__", _setstate)
    return made


COMPILE_AFTER = 32
"""Constructions of a class that the shared ``__init__`` serves before the class's own is
compiled. A one-shot command builds most classes a few times: compiling each one's
``__init__`` on first use was ~5 ms of a one-turn ``exec`` (43 compiles), more than the
command's other value-class work; a process that builds a class often gets the compiled one
after this many."""


def _install(cls: Any, name: str, build: Callable[[Any], Callable[..., Any]]) -> Any:
    """Compile ``cls``'s own ``name`` with ``build`` and put it in the placeholder's place."""
    real = cls.__dict__[name]
    if getattr(real, "__wrapped_build__", None) is build:  # still the placeholder
        real = build(cls)
        real.__qualname__ = f"{cls.__qualname__}.{name}"
        type.__setattr__(cls, name, real)
    return real


def _lazy(cls: type, name: str, build: Callable[[Any], Callable[..., Any]]) -> Callable[..., Any]:
    """A method that compiles the class's own with ``build`` on its first call, installs it
    in its place and runs it: the import compiles nothing, a class never used never does."""

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return _install(cls, name, build)(self, *args, **kwargs)

    method.__name__, method.__qualname__ = name, f"{cls.__qualname__}.{name}"
    method.__wrapped_build__ = build  # type: ignore[attr-defined]
    return method


def _shared_init(cls: Any) -> Callable[..., None]:
    """``__init__`` by the field list, for the class's first ``COMPILE_AFTER`` constructions.

    It binds and assigns as the compiled one does (positional then keyword, defaults,
    factories, ``__post_init__``). A call it cannot bind (a missing, repeated or unknown
    argument) goes to the compiled one, so the TypeError is word for word a dataclass's."""
    spec = [(f.name, f.default, f.default_factory) for f in _fields(cls)]
    names = frozenset(name for name, _, _ in spec)
    assign = object.__setattr__ if cls.__value_frozen__ else setattr
    left = [COMPILE_AFTER]

    def bind(self: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        if len(args) > len(spec) or (kwargs and not names.issuperset(kwargs)):
            return False
        for i, (name, default, factory) in enumerate(spec):
            if i < len(args):
                if name in kwargs:
                    return False
                item = args[i]
            elif name in kwargs:
                item = kwargs[name]
            elif factory is not MISSING:
                item = factory()
            elif default is not MISSING:
                item = default
            else:
                return False
            assign(self, name, item)
        return True

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        left[0] -= 1
        if left[0] < 0 or not bind(self, args, kwargs):
            _install(cls, "__init__", _compile_init)(self, *args, **kwargs)
        elif hasattr(cls, "__post_init__"):
            self.__post_init__()

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__wrapped_build__ = _compile_init  # type: ignore[attr-defined]
    return __init__


def _compile(
    params: str, lines: list[str], scope: dict[str, Any], returns: str = ""
) -> Callable[..., Any]:
    """One function from its lines: the code ``dataclasses`` writes for the same method."""
    body = "\n".join(f"  {line}" for line in lines or ["pass"])
    source = f"def method({params}){returns}:\n{body}\n"
    # once per class and method, on first use; dont_inherit: annotations evaluated, as
    # dataclasses' are, not this module's postponed ones
    exec(compile(source, "<valueclass>", "exec", dont_inherit=True), scope)
    method: Callable[..., Any] = scope["method"]
    return method


def _fields(cls: Any, attr: str = "") -> list[Field]:
    """The class's fields (not its ClassVars), those with ``attr`` set when it is given."""
    return [f for f in cls.__value_fields__ if not f.classvar and (not attr or getattr(f, attr))]


def _compile_init(cls: Any) -> Callable[..., Any]:
    """``__init__``: each field assigned in order, defaults and factories as dataclasses'."""
    scope: dict[str, Any] = {"__value_set__": object.__setattr__, "_HAS_DEFAULT_FACTORY": _FACTORY}
    params, lines = ["self"], []
    for f in _fields(cls):
        value, scope[f"__type_{f.name}__"] = f.name, f.type  # annotated, as dataclasses'
        param = f"{f.name}:__type_{f.name}__"
        if f.default_factory is not MISSING:
            scope[f"__dflt_{f.name}__"] = f.default_factory
            params.append(f"{param}=_HAS_DEFAULT_FACTORY")
            value = f"__dflt_{f.name}__() if {f.name} is _HAS_DEFAULT_FACTORY else {f.name}"
        elif f.default is not MISSING:
            scope[f"__dflt_{f.name}__"] = f.default
            params.append(f"{param}=__dflt_{f.name}__")
        else:
            params.append(param)
        if cls.__value_frozen__:
            lines.append(f"__value_set__(self, {f.name!r}, {value})")
        else:
            lines.append(f"self.{f.name} = {value}")
    if hasattr(cls, "__post_init__"):
        lines.append("self.__post_init__()")
    return _compile(", ".join(params), lines, {**scope, "__none__": None}, "->__none__")


def _compared(cls: Any, name: str, hashed: bool = False) -> str:
    """``(name.a,name.b,)``: the tuple dataclasses compares (or, ``hashed``, hashes)."""
    chosen = _fields(cls, "compare")
    if hashed:  # dataclasses' rule: hash=None follows compare
        chosen = [f for f in _fields(cls) if (f.compare if f.hash is None else f.hash)]
    return "(" + "".join(f"{name}.{f.name}," for f in chosen) + ")"


def _compile_eq(cls: Any) -> Callable[..., Any]:
    """``__eq__``: the same class, and equal tuples of the compared fields."""
    return _compile(
        "self, other",
        [
            "if other.__class__ is self.__class__:",
            f"  return {_compared(cls, 'self')}=={_compared(cls, 'other')}",
            "return NotImplemented",
        ],
        {},
    )


def _compile_hash(cls: Any) -> Callable[..., Any]:
    """``__hash__`` of a frozen class: the hash of the compared fields' tuple."""
    return _compile("self", [f"return hash({_compared(cls, 'self', hashed=True)})"], {})


def _compile_repr(cls: Any) -> Callable[..., Any]:
    """``__repr__``: ``Name(a=1, b='x')``, guarded against a value that holds itself."""
    inner = ", ".join(f"{f.name}={{self.{f.name}!r}}" for f in _fields(cls, "repr"))
    scope: dict[str, Any] = {"_RUNNING": _RUNNING, "_get_ident": get_ident}
    return _compile(
        "self",
        [
            "key = id(self), _get_ident()",
            "if key in _RUNNING:",
            "  return '...'",  # as dataclasses' recursive_repr
            "_RUNNING.add(key)",
            "try:",
            f'  return self.__class__.__qualname__ + f"({inner})"',
            "finally:",
            "  _RUNNING.discard(key)",
        ],
        scope,
    )


_RUNNING: set[tuple[int, int]] = set()


def _frozen_error(message: str) -> Exception:
    from dataclasses import FrozenInstanceError  # only on this error path

    return FrozenInstanceError(message)


def _frozen_set(cls: Any) -> Callable[[Any, str, Any], None]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in cls.__value_init__:
            raise _frozen_error(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    return __setattr__


def _frozen_del(cls: Any) -> Callable[[Any, str], None]:
    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in cls.__value_init__:
            raise _frozen_error(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __delattr__


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, name) for name in type(self).__value_init__]


def _setstate(self: Any, state: list[Any]) -> None:
    for name, item in zip(type(self).__value_init__, state, strict=False):
        object.__setattr__(self, name, item)


class _Lazy:
    """A class attribute built on first access (from the class), then stored in its place."""

    def __init__(self, name: str, build: Callable[[type], Any]) -> None:
        self.name = name
        self.build = build

    def __get__(self, obj: Any, owner: type) -> Any:
        for klass in owner.__mro__:  # the class that holds this attribute
            if klass.__dict__.get(self.name) is self:
                built = self.build(klass)
                type.__setattr__(klass, self.name, built)
                return built
        return self.build(owner)


def _dataclass_fields(cls: Any) -> dict[str, Any]:
    """``__dataclass_fields__`` as ``dataclasses`` would have set it: real ``Field``s.

    Made by the public ``dataclasses.field``, whose keywords are the same on every Python
    this package supports (``Field``'s own constructor grows positional parameters)."""
    import dataclasses

    out: dict[str, Any] = {}
    for f in cls.__value_fields__:
        made: Any = dataclasses.field(
            default=f.default if f.default is not MISSING else dataclasses.MISSING,
            default_factory=(
                f.default_factory if f.default_factory is not MISSING else dataclasses.MISSING
            ),
            repr=f.repr,
            hash=f.hash,
            compare=f.compare,
        )
        made.name, made.type = f.name, f.type
        if not f.classvar:  # as dataclasses settles it; a ClassVar keeps MISSING
            made.kw_only = False
        made._field_type = dataclasses._FIELD_CLASSVAR if f.classvar else dataclasses._FIELD  # type: ignore[attr-defined]
        out[f.name] = made
    return out


def _settle_init(cls: Any) -> None:
    """For ``inspect.signature``: the real ``__init__`` in place, so it reads that one's."""
    if "__init__" in cls.__dict__:
        _install(cls, "__init__", _compile_init)


def _dataclass_params(cls: Any) -> Any:
    """``__dataclass_params__`` as ``dataclasses`` would have set it: a real dataclass's with
    the same options (its constructor's parameters differ between Python versions)."""
    import dataclasses

    twin = dataclasses.dataclass(frozen=cls.__value_frozen__, slots=cls.__value_slots__)
    return twin(type(cls.__name__, (), {})).__dataclass_params__  # type: ignore[attr-defined]
