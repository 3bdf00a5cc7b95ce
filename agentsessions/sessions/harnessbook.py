"""Which out-of-process harnesses a host may place sessions on (spec digest 1.4).

:class:`HarnessBook` keeps the HarnessRegistry's rules, free of gRPC (the service in
``agentsessions/server/registry.py`` maps them): ``register`` (CREATED, UNCHANGED for the
same spec, REACTIVATED for a retired name with the same spec; HarnessExistsError for a name
holding another spec, or a static one), ``get``, ``list`` (name order, paged) and
``retire`` (idempotent; the first reason is kept; HarnessRegistryError for a static name).
A registration is a plain dict in proto3-JSON (the HarnessRegistration message), so what is
stored is what the service returns.

Every registration belongs to a project (``metadata.project``; every method takes the
project it acts in). Names are per project: projects A and B may each register ``planner``,
each with its own spec, and neither sees, retires nor runs on the other's; to a lookup in
project B, A's ``planner`` is exactly a name nobody registered (the same NotFoundError, word
for word). A registration made before projects were recorded belongs to ``default``.
Static names are the built-in harnesses (echo, counter, chat, memory), the ``NAME=ADDRESS``
pairs an operator gives ``agentsessions serve --harness`` (:func:`static_remotes`) and any
installed harness plugin: shared by every project, listed with source STATIC, never
stored, never retired, and no project may register one (HarnessExistsError).

Storage is behind :class:`HarnessRecords` (two methods): the file store keeps the
registrations in ``HARNESSES.json`` in its home, replaced atomically and durably
(``FileSystem.write_file_atomic``) under an advisory lock, so an acknowledged registration
survives a crash; the memory store keeps them with the store object. A distributed store
implements the same two methods. :func:`load_registered` makes the active remote
registrations resolvable by name in ``HARNESSES`` for sessions of their own project only
(``exec --harness NAME``): a session of another project never dials the address.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from agentsessions.errors import (
    HarnessExistsError,
    HarnessRegistryError,
    InvalidArgumentError,
    NotFoundError,
    StorageError,
)
from agentsessions.journal.format import canonical
from agentsessions.journal.stores.store import DEFAULT_PROJECT, Store
from agentsessions.v1.ids import check_project

from .wiring import HARNESSES

Registration = dict[str, Any]
BUILT_IN = ("chat", "counter", "echo", "memory")
FILE_NAME = "HARNESSES.json"
DEFAULT_PAGE, MAX_PAGE = 50, 500
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
STATELESS = "RESUMABILITY_STATELESS_REPLAY"


class HarnessRecords(Protocol):
    """Where registrations live: read them all, or change them in one step."""

    def read(self) -> dict[str, Registration]: ...

    def update(self, change: Callable[[dict[str, Registration]], bool]) -> None:
        """Apply ``change`` to the current registrations and keep the result if it says
        True, atomically against other updaters; durable before this returns."""
        ...


class MemoryRecords:
    """Registrations in process memory (the memory store's)."""

    def __init__(self) -> None:
        self._data: dict[str, Registration] = {}
        self._lock = threading.Lock()

    def read(self) -> dict[str, Registration]:
        with self._lock:
            return json.loads(json.dumps(self._data))  # type: ignore[no-any-return]

    def update(self, change: Callable[[dict[str, Registration]], bool]) -> None:
        with self._lock:
            data = json.loads(json.dumps(self._data))
            if change(data):
                self._data = data


class FileRecords:
    """Registrations in ``HARNESSES.json`` of a file store's home."""

    def __init__(self, home: Path, fs: Any) -> None:
        self.path = Path(home) / FILE_NAME
        self.fs = fs

    def read(self) -> dict[str, Registration]:
        try:
            text = self.path.read_text("utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise StorageError(f"cannot read {self.path}: {exc.strerror}") from None
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise StorageError(f"{self.path} is damaged: {exc}") from None
        return dict(data.get("harnesses", {}))

    def update(self, change: Callable[[dict[str, Registration]], bool]) -> None:
        with self._locked():
            data = self.read()
            if change(data):
                body = json.dumps({"harnesses": data}, sort_keys=True, indent=1) + "\n"
                self.fs.write_file_atomic(self.path, body.encode())

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            handle = open(self.path.with_name(FILE_NAME + ".lock"), "a")  # noqa: SIM115
        except OSError as exc:
            raise StorageError(f"cannot lock {self.path}: {exc.strerror}") from None
        with handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield


_MEMORY: weakref.WeakKeyDictionary[Any, MemoryRecords] = weakref.WeakKeyDictionary()


def records_for(store: Store) -> HarnessRecords:
    """The registrations of ``store``: its own if it keeps them (HarnessBook), a file in a
    file store's home (SessionFiles), else (the memory store) memory that lives as long as
    the store object."""
    from agentsessions.journal.stores.capabilities import HARNESS_BOOK, SESSION_FILES

    book, files = HARNESS_BOOK.of(store), SESSION_FILES.of(store)
    if book is not None:
        return book.harness_records()
    if files is not None:
        return FileRecords(files.home, files.fs)
    return _MEMORY.setdefault(store, MemoryRecords())


# --------------------------------------------------------------------------- static names

_STATIC_REMOTES: dict[str, str] = {}


def parse_pair(pair: str) -> tuple[str, str]:
    """``NAME=ADDRESS`` (``serve --harness``) as its two parts; InvalidArgumentError."""
    name, sep, address = pair.partition("=")
    if not sep or not address:
        raise InvalidArgumentError(
            f"remote harness {pair!r}: expected NAME=ADDRESS", param="remote_harness"
        )
    check_name(name)
    check_address(address)
    return name, address


def static_remotes(pairs: Sequence[str]) -> dict[str, str]:
    """Register each ``NAME=ADDRESS`` as a static remote harness of this process (resolvable
    by name, listed STATIC by the registry); returns them. A built-in name is refused."""
    from agentsessions.runtimes.remote import remote_harness

    parsed = dict(parse_pair(p) for p in pairs)
    for name, address in parsed.items():
        if name in BUILT_IN:
            raise InvalidArgumentError(
                f"remote harness {name!r}: a built-in harness has that name",
                hint="give it another name",
            )
        HARNESSES.register(name, remote_harness(address, name))
        _STATIC_REMOTES[name] = address
    return parsed


def check_name(name: str) -> None:
    """An RFC 1123 DNS label of at most 63 characters."""
    if not _LABEL.fullmatch(name or ""):
        raise InvalidArgumentError(
            f"invalid harness name {name!r}: an RFC 1123 DNS label (a-z, 0-9, '-', at most 63)"
        )


def check_address(address: str) -> None:
    """``host:port`` or ``unix:///path`` (``unix:/path`` too)."""
    if address.startswith("unix:"):
        if address.removeprefix("unix://").removeprefix("unix:").startswith("/"):
            return
    else:
        host, sep, port = address.rpartition(":")
        if sep and host and port.isdigit():
            return
    raise InvalidArgumentError(f"invalid harness address {address!r}: HOST:PORT or unix:///path")


def spec_digest(spec: Mapping[str, Any]) -> str:
    """``sha256:`` + hex SHA-256 of the spec's RFC 8785 form (its proto3-JSON dict)."""
    return "sha256:" + hashlib.sha256(canonical.canonical_json(dict(spec))).hexdigest()


def _ts(ns: int) -> str:
    """proto3-JSON Timestamp text (UTC, microseconds)."""
    secs, rest = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{rest // 1000:06d}Z"


def _static(name: str) -> Registration:
    if name in _STATIC_REMOTES:
        spec: dict[str, Any] = {
            "remote": {"address": _STATIC_REMOTES[name]},
            "capabilities": {"resumability": STATELESS},
        }
    else:
        caps = HARNESSES.create(name).describe().capabilities
        spec = {"capabilities": {"resumability": caps.resumability}, "descriptor_id": name}
    return {
        "metadata": {"name": name},
        "spec": spec,
        "spec_digest": spec_digest(spec),
        "state": "HARNESS_STATE_ACTIVE",
        "source": "HARNESS_SOURCE_STATIC",
    }


def static_names() -> list[str]:
    return sorted({*BUILT_IN, *_STATIC_REMOTES})


# --------------------------------------------------------------------------- the book


class HarnessBook:
    """The HarnessRegistry's rules over one store's registrations, project by project."""

    def __init__(self, records: HarnessRecords) -> None:
        self.records = records

    def register(
        self, name: str, spec: Mapping[str, Any], project: str = DEFAULT_PROJECT
    ) -> tuple[Registration, str]:
        """Register ``name`` in ``project`` with ``spec`` (a HarnessSpec dict);
        (registration, outcome)."""
        check_name(name)
        check_project(project)
        spec = dict(spec)
        _check_spec(name, spec)
        if name in static_names() or HARNESSES.shared(name):
            raise HarnessExistsError(f"harness {name!r} is a static harness of this host")
        digest, now, key = spec_digest(spec), time.time_ns(), _key(project, name)
        out: dict[str, Any] = {}

        def change(data: dict[str, Registration]) -> bool:
            moved = _migrate(data)
            old = data.get(key)
            if old is not None and old["spec_digest"] != digest:
                raise HarnessExistsError(
                    f"harness {name!r} is registered with another spec ({old['spec_digest']})",
                    hint="register under another name (a name keeps its spec, even retired)",
                )
            if old is not None and old["state"] == "HARNESS_STATE_ACTIVE":
                out.update(reg=old, outcome="REGISTER_OUTCOME_UNCHANGED")
                return moved
            if old is not None:  # retired with the same spec: active again
                reg = {**old, "state": "HARNESS_STATE_ACTIVE"}
                reg["metadata"] = _bumped(old["metadata"], now)
                out.update(reg=reg, outcome="REGISTER_OUTCOME_REACTIVATED")
            else:
                meta = {
                    "project": project,
                    "name": name,
                    "uid": os.urandom(16).hex(),
                    "version": "1",
                    "create_time": _ts(now),
                    "update_time": _ts(now),
                }
                reg = {
                    "metadata": meta,
                    "spec": spec,
                    "spec_digest": digest,
                    "state": "HARNESS_STATE_ACTIVE",
                    "source": "HARNESS_SOURCE_REGISTERED",
                }
                out.update(reg=reg, outcome="REGISTER_OUTCOME_CREATED")
            data[key] = reg
            return True

        self.records.update(change)
        _resolvable(project, name, out["reg"])
        return out["reg"], out["outcome"]

    def get(self, name: str, project: str = DEFAULT_PROJECT) -> Registration:
        """The registration of ``name`` as ``project`` sees it (static ones too);
        NotFoundError, the same for another project's name as for an unknown one."""
        check_name(name)
        if name in static_names():
            return _static(name)
        found = self.of(project).get(name)
        if found is None:
            raise NotFoundError(
                f"no harness {name!r} is registered", hint="agentsessions harness list"
            )
        return found

    def of(self, project: str) -> dict[str, Registration]:
        """``project``'s registrations by name."""
        check_project(project)
        every = _by_key(self.records.read())
        return {n: reg for (p, n), reg in every.items() if p == project}

    def list(
        self,
        page_size: int = 0,
        page_token: str = "",
        include_retired: bool = False,
        project: str = DEFAULT_PROJECT,
    ) -> tuple[list[Registration], str]:
        """One page in name order (the static harnesses and ``project``'s) and the next
        page's token ("" at the end)."""
        if page_size < 0:
            raise InvalidArgumentError(f"page_size {page_size} is negative")
        size = min(page_size or DEFAULT_PAGE, MAX_PAGE)
        after = _after(page_token, include_retired)
        every = {n: _static(n) for n in static_names()}
        every.update({n: r for n, r in self.of(project).items() if n not in every})
        names = sorted(
            n for n, r in every.items() if include_retired or r["state"] == "HARNESS_STATE_ACTIVE"
        )
        names = [n for n in names if n > after]
        page = names[:size]
        more = len(names) > size
        return [every[n] for n in page], _token(page[-1], include_retired) if more else ""

    def retire(self, name: str, reason: str = "", project: str = DEFAULT_PROJECT) -> Registration:
        """Retire ``project``'s ``name`` (again: unchanged, the first reason kept)."""
        check_name(name)
        check_project(project)
        if name in static_names():
            raise HarnessRegistryError(f"harness {name!r} is static: it cannot be retired")
        out: dict[str, Any] = {}
        key = _key(project, name)

        def change(data: dict[str, Registration]) -> bool:
            moved = _migrate(data)
            old = data.get(key)
            if old is None:
                raise NotFoundError(f"no harness {name!r} is registered")
            if old["state"] == "HARNESS_STATE_RETIRED":
                out["reg"] = old
                return moved
            now = time.time_ns()
            reg = {
                **old,
                "state": "HARNESS_STATE_RETIRED",
                "retire_time": _ts(now),
                "metadata": _bumped(old["metadata"], now),
            }
            if reason:
                reg["retire_reason"] = reason
            data[key] = out["reg"] = reg
            return True

        self.records.update(change)
        _resolvable(project, name, out["reg"])
        return out["reg"]  # type: ignore[no-any-return]


def _key(project: str, name: str) -> str:
    """Where a registration is stored: ``PROJECT/NAME`` (a project name has no ``/``)."""
    return f"{project}/{name}"


def _by_key(data: Mapping[str, Registration]) -> dict[tuple[str, str], Registration]:
    """Stored registrations by (project, name); one stored under a bare name (before
    projects were recorded) is ``default``'s."""
    out: dict[tuple[str, str], Registration] = {}
    for key, reg in data.items():
        project, sep, name = key.rpartition("/")
        if not sep:
            reg = {**reg, "metadata": {"project": DEFAULT_PROJECT, **reg.get("metadata", {})}}
        out[project or DEFAULT_PROJECT, name] = reg
    return out


def _migrate(data: dict[str, Registration]) -> bool:
    """Store bare-name registrations under ``default/NAME`` (True if any moved)."""
    bare = [k for k in data if "/" not in k]
    for key in bare:
        reg = data.pop(key)
        data[_key(DEFAULT_PROJECT, key)] = _by_key({key: reg})[DEFAULT_PROJECT, key]
    return bool(bare)


def _check_spec(name: str, spec: Mapping[str, Any]) -> None:
    caps = dict(spec.get("capabilities") or {})
    resumability = caps.get("resumability", "RESUMABILITY_UNSPECIFIED")
    if resumability == "RESUMABILITY_UNSPECIFIED":
        raise InvalidArgumentError(f"harness {name!r}: spec.capabilities.resumability is required")
    if "substrate" in spec:
        raise HarnessRegistryError(
            f"harness {name!r}: this host cannot serve a substrate placement (only remote)"
        )
    remote = spec.get("remote")
    if not isinstance(remote, Mapping):
        raise InvalidArgumentError(f"harness {name!r}: the spec names no placement")
    check_address(str(remote.get("address", "")))
    if resumability != STATELESS:
        raise HarnessRegistryError(
            f"harness {name!r}: a remote harness must be {STATELESS} (its turns are continued "
            "by replay over the wire; the host holds none of its memory)"
        )


def _bumped(meta: Mapping[str, Any], now: int) -> dict[str, Any]:
    version = int(meta.get("version", 0) or 0) + 1
    return {**meta, "version": str(version), "update_time": _ts(now)}


def _token(last: str, include_retired: bool) -> str:
    raw = json.dumps({"after": last, "retired": include_retired}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _after(token: str, include_retired: bool) -> str:
    if not token:
        return ""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        body = json.loads(raw)
        after, retired = str(body["after"]), bool(body["retired"])
    except (ValueError, KeyError, TypeError):
        raise InvalidArgumentError(f"invalid page_token {token!r}") from None
    if retired != include_retired:
        raise InvalidArgumentError("page_token was issued for another include_retired")
    return after


def _resolvable(project: str, name: str, reg: Mapping[str, Any]) -> None:
    """Make an active remote registration resolvable by name for ``project``'s sessions
    (only theirs); forget a retired one (saying so to that project, never "unknown")."""
    from agentsessions.runtimes.remote import remote_harness

    address = str(dict(reg.get("spec", {}).get("remote", {})).get("address", ""))
    if reg.get("state") == "HARNESS_STATE_ACTIVE" and address:
        HARNESSES.register(name, remote_harness(address, name), project=project)
    elif reg.get("state") == "HARNESS_STATE_RETIRED":
        reason = str(reg.get("retire_reason", "")) or "no reason given"
        HARNESSES.unregister(
            name,
            retired=f"new turns cannot run on it ({reason})",
            hint=f"agentsessions harness register {name} --address ADDRESS makes it active again",
            project=project,
        )
    else:
        HARNESSES.unregister(name, project=project)


def load_registered(store: Any) -> None:
    """Make ``store``'s active remote registrations resolvable by name in ``HARNESSES``,
    each for its own project's sessions (an engine does this when it makes its runtime)."""
    try:
        registered = _by_key(records_for(store).read())
    except StorageError:
        return  # a damaged registry must not stop commands that use no remote harness
    for (project, name), reg in registered.items():
        if name not in static_names():
            _resolvable(project, name, reg)
