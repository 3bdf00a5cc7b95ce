"""A session's ``session.json``: written with a checksum per field, read strictly or refused.

The file store relies on ``session.json`` for the session's identity (its ``uid`` must be the
directory's name), its project (what a project-scoped token may see), its creation time (the
listing index is rebuilt from them), its harness and model, and, for a forked child, where
its prefix lives (``parent_uid``, ``fork_seq``). So the file is checked like the journal
(``docs/FORMAT.md`` 1a):

- strict shape: exactly the known keys (an unknown key, a missing one, a wrong type is
  damage, never a default: a flipped key name used to fall back silently);
- ``sums``: per field, the first 8 bytes (16 hex digits) of SHA-256 over the session's
  uid, a NUL and the field as the file encodes it (``{"key":value}``, compact, ASCII); a
  field that does not match is damage naming that field; the uid binds each sum to its
  session;
- canonical bytes: the file must be exactly what :func:`meta_bytes` writes for what it holds
  (compact, sorted, ASCII), so a change no value shows (an escape's letter case) is found too.

Any damage is :class:`~agentsessions.errors.MetadataCorruptError` (exit 8) naming the session,
the file and the field (``field``), never a bare parser message and never a guess.

A file written before the sums existed (0.1.0) has every key but ``sums``: it is read with
the strict shape and byte checks, and :meth:`MetaRead.summed` says it is unsummed so the
next writer open adds them (``FileStore.writer``) and ``verify`` says so.

Invariants: this module only reads and encodes (the store writes the bytes, atomically and
durably); the same checks back ``get``, ``log``, writers, ``list`` rows, the JetStream
store's metadata messages and ``verify`` (of a uid or of a directory anywhere on disk).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentsessions.errors import AgentSessionsError, MetadataCorruptError
from agentsessions.journal.format import strictjson
from agentsessions.journal.stores.store import SessionMeta
from agentsessions.v1.ids import check_project, check_uid
from agentsessions.valueclass import value

META_NAME = "session.json"
SUMS_KEY = "sums"

# every key 0.1.0 wrote (it always wrote them all), then the optional one
_REQUIRED = (
    "uid", "project", "name", "harness", "model", "labels", "annotations", "origin",
    "identity", "parent_uid", "fork_seq", "create_time_ns",
)  # fmt: skip
_OPTIONAL = ("encrypted",)  # present (and true) only on an encrypted session
_KNOWN = frozenset((*_REQUIRED, *_OPTIONAL, SUMS_KEY))
_TEXT_KEYS = ("name", "harness", "model")
_PAIR_KEYS = ("labels", "annotations")
_OBJECT_KEYS = ("origin", "identity")
_SUM = re.compile(r"[0-9a-f]{16}")
_CLIP = 60  # how much of a damaged value a message quotes
_OFFSET = re.compile(r"\((?:byte|char) (\d+)\)")  # msgspec's, json's
_KEY = re.compile(rb'"([a-z_]+)":')


@value(frozen=True)
class MetaRead:
    """What :func:`read` found: the checked metadata, and whether it carries ``sums``
    (False only for a file written before they existed)."""

    meta: SessionMeta
    summed: bool


@value(frozen=True)
class Problem:
    """Why a metadata object is not usable: the text, and the field it concerns."""

    text: str
    field: str = ""


def field_sum(uid: str, key: str, value: Any) -> str:
    """The checksum of field ``key`` holding ``value`` in session ``uid``'s metadata."""
    body = _encode({key: value})
    return hashlib.sha256(uid.encode() + b"\0" + body).hexdigest()[:16]


def summed_json(meta: SessionMeta) -> dict[str, Any]:
    """``meta`` as the stored object: its JSON plus ``sums`` over every field."""
    obj = meta.to_json()
    obj[SUMS_KEY] = {key: field_sum(meta.uid, key, value) for key, value in obj.items()}
    return obj


def meta_bytes(meta: SessionMeta) -> bytes:
    """The bytes of ``session.json`` for ``meta`` (the only form a reader accepts)."""
    return _encode(summed_json(meta))


_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
"""``json.dumps(obj, sort_keys=True, separators=(",", ":"))``'s encoder, made once: a
listing checks ~12 sums per session, and ``dumps`` with arguments builds one per call."""


def _encode(obj: Any) -> bytes:
    return _ENCODER.encode(obj).encode()


def read_meta(sdir: Path) -> SessionMeta:
    """The checked metadata of the session directory ``sdir`` (its name is the uid).

    Raises MetadataCorruptError naming the session, the file and the field when the file
    cannot be read or does not hold what the store relies on.
    """
    return read(sdir).meta


def read(sdir: Path) -> MetaRead:
    """:func:`read_meta`, also saying whether the file carries its ``sums``."""
    path = sdir / META_NAME
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise damaged(sdir, path, f"cannot be read ({exc.strerror or exc})") from exc
    try:
        # canonical.loads's verdicts without msgspec, whose import a list would pay for this
        obj = strictjson.loads(raw)
    except AgentSessionsError as exc:  # strictjson raises FormatError for any non-JSON
        why = exc.message.removeprefix("invalid JSON: ")
        field = _field_near(raw, why)
        where = f", in {field!r}" if field else ""
        raise damaged(sdir, path, f"is not valid JSON ({why}){where}", field) from exc
    problem = check_object(obj, sdir.name, raw)
    if problem is not None:
        raise damaged(sdir, path, problem.text, problem.field)
    return MetaRead(SessionMeta.from_json(obj), SUMS_KEY in obj)


def check_object(obj: Any, uid: str, raw: bytes | None = None) -> Problem | None:
    """Why ``obj`` (decoded metadata of session ``uid``; ``raw``: the bytes it was decoded
    from, when they must be canonical) is not usable metadata, or None when it is."""
    if not isinstance(obj, Mapping):
        return Problem(f"is not a JSON object (found {type(obj).__name__})")
    found = obj.get("uid")
    if not isinstance(found, str):
        return Problem("has no string 'uid'", "uid")
    if found != uid:
        return Problem(f"has a 'uid' of {_clip(found)}, but it is stored as {uid!r}", "uid")
    unknown = sorted(set(obj) - _KNOWN)
    if unknown:
        return Problem(f"has an unknown key {_clip(unknown[0])}", unknown[0])
    missing = [key for key in _REQUIRED if key not in obj]
    if missing:
        return Problem(f"has no {missing[0]!r}", missing[0])
    problem = _shape_problem(obj) or _sums_problem(obj, uid)
    if problem is not None or raw is None:
        return problem
    canonical_form = _encode(obj)
    if raw != canonical_form:
        pairs = enumerate(zip(raw, canonical_form, strict=False))
        at = next((i for i, (a, b) in pairs if a != b), min(len(raw), len(canonical_form)))
        field = _field_at(raw, at)
        problem = Problem(
            f"is not in its canonical form (it differs at byte {at}, in {field!r})", field
        )
    return problem


def _shape_problem(obj: Mapping[str, Any]) -> Problem | None:
    """The first field of the wrong type or value, or None."""
    checks = (
        ("project", _project_problem(obj["project"])),
        ("create_time_ns", _int_problem(obj["create_time_ns"])),
        ("fork_seq", _int_problem(obj["fork_seq"])),
        ("parent_uid", _parent_problem(obj["parent_uid"])),
        *((key, _text_problem(obj[key])) for key in _TEXT_KEYS),
        *((key, _pairs_problem(obj[key])) for key in _PAIR_KEYS),
        *((key, _object_problem(obj[key])) for key in _OBJECT_KEYS),
        ("encrypted", "" if obj.get("encrypted", True) is True else "is not true"),
    )
    for key, why in checks:
        if why:
            return Problem(f"has a {key!r} that {why}", key)
    return None


def _sums_problem(obj: Mapping[str, Any], uid: str) -> Problem | None:
    """Why the ``sums`` do not vouch for every field (None without sums: an older file)."""
    sums = obj.get(SUMS_KEY)
    if sums is None and SUMS_KEY not in obj:
        return None
    if not isinstance(sums, Mapping):
        return Problem(f"has a {SUMS_KEY!r} that is not an object", SUMS_KEY)
    fields = [key for key in obj if key != SUMS_KEY]
    extra = sorted(set(sums) - set(fields))
    if extra:
        return Problem(f"has a checksum for no field: {SUMS_KEY}.{_clip(extra[0])}", extra[0])
    for key in sorted(fields):
        stored = sums.get(key)
        if stored is None:
            return Problem(f"has no checksum for {key!r} ({SUMS_KEY}.{key})", key)
        if not isinstance(stored, str) or not _SUM.fullmatch(stored):
            return Problem(f"has a damaged checksum for {key!r} ({SUMS_KEY}.{key})", key)
        if stored != field_sum(uid, key, obj[key]):
            return Problem(
                f"has a {key!r} that does not match its checksum (it reads {_clip(obj[key])})",
                key,
            )
    return None


def damaged(sdir: Path, path: Path, problem: str, field: str = "") -> MetadataCorruptError:
    """The error for a damaged metadata file of the session in ``sdir``."""
    return MetadataCorruptError(
        f"session {sdir.name}: damaged metadata: {path} {problem}",
        hint="restore the file from a backup or an export; 'agentsessions verify --all' "
        "lists every damaged session",
        session=sdir.name,
        path=str(path),
        problem=f"{path.name} {problem}",
        field=field,
    )


def _field_near(raw: bytes, why: str) -> str:
    """The known key whose value (or sum) holds the offset a JSON error names, or ""."""
    at = _OFFSET.search(why)
    if at is not None:
        return _field_at(raw, int(at.group(1)))
    # not UTF-8: the file is ASCII, so the first byte above 0x7f is the damage
    return _field_at(raw, next((i for i, b in enumerate(raw) if b > 0x7F), -1))


def _field_at(raw: bytes, offset: int) -> str:
    """The last known key (a field's, or its sum's) that starts before ``offset``, or ""."""
    keys = [m.group(1).decode() for m in _KEY.finditer(raw, 0, offset + 1)] if offset >= 0 else []
    return next((key for key in reversed(keys) if key in _KNOWN and key != SUMS_KEY), "")


def _clip(value: Any) -> str:
    """``value`` quoted for a message, at most about :data:`_CLIP` characters."""
    text = repr(value)
    return text if len(text) <= _CLIP else text[: _CLIP - 3] + "..."


def _project_problem(value: Any) -> str:
    if not isinstance(value, str):
        return "is not a string"
    try:
        check_project(value)
    except AgentSessionsError:
        return f"is not a valid project name ({_clip(value)})"
    return ""


def _int_problem(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return "is not a non-negative integer"
    return ""


def _parent_problem(value: Any) -> str:
    if value == "":
        return ""
    try:
        check_uid(value)
    except AgentSessionsError:
        return f"is not a session id ({_clip(value)})"
    return ""


def _text_problem(value: Any) -> str:
    return "" if isinstance(value, str) else "is not a string"


def _pairs_problem(value: Any) -> str:
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        return "is not an object of strings"
    return ""


def _object_problem(value: Any) -> str:
    return "" if value is None or isinstance(value, Mapping) else "is not an object or null"
