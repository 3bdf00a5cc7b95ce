"""A turn request as one value: what a caller asks of one exec or run.

A :class:`TurnRequest` is built once where the request enters (a keyword call of
``Sessions.exec``/``run``, the CLI's flags, an ``ExecRequest`` off the wire) and passed
whole to the engine and on to the controller, as httpx passes a ``Request``: a new turn
option is a field here, its parsing at each front end, and the code that uses it.

It lives in ``v1``, the vocabulary every layer speaks (this package imports nothing of
agentsessions but the errors), so that the controller, which sits below the ``Sessions``
API, takes the very value the front end built. :data:`DEFAULT_PROJECT` is defined here for
the same reason: the journal's session metadata, the engine and the server all default to it.

Invariants: a request is frozen; its inputs are ``agentsessions.v1`` Messages (a text input
became a user message when the request was built); "" means "not chosen" for ``harness``,
``model`` and ``tools`` (the session's or the engine's default applies); it checks nothing
about the store: the engine does (``agentsessions.sessions.checks``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from os import PathLike
from typing import Any, TypedDict, Unpack

from agentsessions.errors import ConflictError, InvalidArgumentError
from agentsessions.valueclass import field, replace, value

from .construct import text_message
from .ids import DEFAULT_PROJECT as DEFAULT_PROJECT  # (re-exported: the rule's module has it)
from .model import Origin
from .provenance import Authored, check_identity, check_origin

TURN_COMMIT_PREFIX = "turn:"
"""What a turn's commit id is prefixed with in the store (whose ids are at most 128 chars)."""
MAX_TURN_COMMIT_ID_LEN = 128 - len(TURN_COMMIT_PREFIX)
"""The longest commit id a turn may carry (a GitHub delivery id is 36)."""

DURABILITY_STEP = "step"
"""The default: a turn's input is durable at once, each effect before the next leaves the
process (a model call, a tool), END before the turn returns: two syncs for a chat turn."""
DURABILITY_TURN = "turn"
"""Opt-in: a turn that calls no tool is durable in one sync, at its END (its input, model
call and answer with it); a crash before END loses only that unacknowledged turn. A tool
call's intent is still durable before its executor runs."""
DURABILITY_MODES = (DURABILITY_STEP, DURABILITY_TURN)


def check_durability(durability: str) -> str:
    """``durability`` if it names a mode ("" = the default); else InvalidArgumentError."""
    if not durability or durability in DURABILITY_MODES:
        return durability
    raise InvalidArgumentError(
        f"unknown durability {durability[:40]!r}: one of {', '.join(DURABILITY_MODES)}",
        param="durability",
    )


Input = str | Mapping[str, Any] | Authored
"""A turn input: a user text, an ``agentsessions.v1`` Message dict (``role``, ``parts``), or
either of them :class:`~.provenance.Authored` (with the IdentityRef of its author)."""


class TurnOptions(TypedDict, total=False):
    """The keyword options of ``Sessions.exec``/``run`` (see :class:`TurnRequest`)."""

    harness: str | None
    model: str | None
    config: bytes
    wait: float
    project: str
    name: str
    labels: Mapping[str, str] | None
    fresh_start: bool
    tools: str | PathLike[str] | None
    expected_last_seq: int | None
    commit_id: str | None
    durability: str | None
    origin: Mapping[str, Any] | None
    identity: Mapping[str, str] | None


_OPTIONS = TurnOptions.__optional_keys__


class SessionOptions(TypedDict, total=False):
    """The keyword options that describe a new session: ``Sessions.create``'s, and
    ``ensure``'s besides its key (the engine and the client take them as one value and hand
    them on whole, so a new option is added here and where it is used)."""

    project: str
    name: str
    harness: str
    model: str
    labels: Mapping[str, str] | None
    annotations: Mapping[str, str] | None
    tools: str | PathLike[str] | None
    origin: Mapping[str, Any] | None
    identity: Mapping[str, str] | None


@value(frozen=True)
class TurnRequest:
    """One turn of session ``uid`` (None: a new session, described by ``project``,
    ``name`` and ``labels``).

    ``inputs``: the turn's Messages; ``harness``/``model``: this turn's choice ("" = the
    session's, else the default); ``config``: bytes handed to the harness; ``wait``: seconds
    to wait for a busy session; ``fresh_start``: restart a memory harness whose memory is
    gone, empty; ``tools``: a workload TOML file recorded with the session;
    ``expected_last_seq``: compare-and-swap, the turn runs only if the session's head is
    this seq (0 for a new session), else ConflictError and nothing is written;
    ``commit_id``: the turn's idempotency key ("" = none; 1-:data:`MAX_TURN_COMMIT_ID_LEN`
    printable characters, an existing session only): a request carrying an id that landed
    in the session already writes nothing and answers with that turn
    (:mod:`agentsessions.controller.landed` has the rules and the window);
    ``durability``: when the turn's records become durable, one of :data:`DURABILITY_MODES`
    ("" = the engine's choice, else ``step``; docs/concepts/durability.md).

    ``actors``: the author of each input (an IdentityRef, ``{}`` for none), as many as
    ``inputs``, or empty when no input has one; recorded as each INPUT event's ``actor``.
    ``origin``/``identity``: a new session's (see :mod:`.provenance`); with an origin and no
    ``uid``, the turn runs on the session that origin names, made if there is none.
    """

    uid: str | None = None
    inputs: tuple[dict[str, Any], ...] = ()
    harness: str = ""
    model: str = ""
    config: bytes = b""
    wait: float = 0.0
    project: str = DEFAULT_PROJECT
    name: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    fresh_start: bool = False
    tools: str | PathLike[str] = ""  # a path (the server's WireWorkload is one)
    expected_last_seq: int | None = None
    commit_id: str = ""
    durability: str = ""
    actors: tuple[Mapping[str, str], ...] = ()
    origin: Origin | None = None
    identity: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        if self.actors and len(self.actors) != len(self.inputs):
            raise InvalidArgumentError(
                f"{len(self.actors)} input actors for {len(self.inputs)} inputs"
            )

    @classmethod
    def of(
        cls,
        uid: str | TurnRequest | None = None,
        inputs: Sequence[Input] = (),
        **options: Unpack[TurnOptions],
    ) -> TurnRequest:
        """The request a keyword call describes (``exec(uid, inputs, harness=...)``), or
        ``uid`` itself when the caller built the request already (then alone)."""
        if isinstance(uid, TurnRequest):
            if inputs or options:
                raise InvalidArgumentError("pass a TurnRequest alone, without inputs or options")
            return uid
        if not options.keys() <= _OPTIONS:  # as a signature would: a misspelt option is none
            unknown = ", ".join(sorted(options.keys() - _OPTIONS))
            raise TypeError(f"unexpected turn option(s): {unknown}")
        messages, actors = authored(inputs)
        origin, identity = options.get("origin"), options.get("identity")
        return cls(
            uid=uid,
            inputs=messages,
            actors=actors,
            origin=check_origin(origin) if origin is not None else None,
            identity=check_identity(identity),
            harness=options.get("harness") or "",
            model=options.get("model") or "",
            config=options.get("config", b""),
            wait=options.get("wait", 0.0),
            project=options.get("project", DEFAULT_PROJECT),
            name=options.get("name", ""),
            labels=dict(options.get("labels") or {}),
            fresh_start=options.get("fresh_start", False),
            tools=options.get("tools") or "",
            expected_last_seq=options.get("expected_last_seq"),
            commit_id=options.get("commit_id") or "",
            durability=options.get("durability") or "",
        )

    @property
    def store_commit_id(self) -> str | None:
        """The commit id the turn's first commit carries in the store (None: the request
        has none); prefixed so that a turn's id never meets a working-state commit's."""
        return TURN_COMMIT_PREFIX + self.commit_id if self.commit_id else None

    def check_head(self, head_seq: int, head_hash: str = "") -> None:
        """ConflictError unless the session's head is the ``expected_last_seq`` asked for
        (none asked: anything goes); made before the turn writes anything."""
        expected = self.expected_last_seq
        if expected is None or expected == head_seq:
            return
        raise ConflictError(
            f"session {self.uid or '(new)'} is at seq {head_seq}, not the expected {expected}; "
            "nothing was written",
            head_seq=head_seq,
            head_hash=head_hash,
            session=self.uid or "",
        )

    def moved(self, by: int) -> TurnRequest:
        """This request after the turn's own records moved the head ``by`` (a wake, a fresh
        start): its expected head moves with them, so a writer elsewhere still loses."""
        if self.expected_last_seq is None or not by:
            return self
        return replace(self, expected_last_seq=self.expected_last_seq + by)


def check_commit_id(commit_id: str) -> str:
    """``commit_id`` if a turn may carry it ("" = none): 1-:data:`MAX_TURN_COMMIT_ID_LEN`
    printable characters; else InvalidArgumentError, before anything is written."""
    if commit_id and len(commit_id) <= MAX_TURN_COMMIT_ID_LEN and commit_id.isprintable():
        return commit_id
    if not commit_id:
        return ""
    raise InvalidArgumentError(
        f"invalid commit id {commit_id[:40]!r}: 1-{MAX_TURN_COMMIT_ID_LEN} printable characters",
        param="commit_id",
    )


def as_message(item: str | Mapping[str, Any]) -> dict[str, Any]:
    """A turn input as an ``agentsessions.v1`` Message: a text becomes a user message."""
    if isinstance(item, str):
        return dict(text_message("user", item))
    return dict(item)


def authored(
    inputs: Sequence[Input],
) -> tuple[tuple[dict[str, Any], ...], tuple[Mapping[str, str], ...]]:
    """The Messages of ``inputs`` and their authors (``{}`` for none; an empty tuple when
    none has one), each author checked (InvalidArgumentError for a malformed one)."""
    messages: list[dict[str, Any]] = []
    actors: list[Mapping[str, str]] = []
    for item in inputs:
        if isinstance(item, Authored):
            messages.append(as_message(item.input))
            actors.append(dict(check_identity(item.actor, "actor") or {}))
        else:
            messages.append(as_message(item))
            actors.append({})
    return tuple(messages), (tuple(actors) if any(actors) else ())
