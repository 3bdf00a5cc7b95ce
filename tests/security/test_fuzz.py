"""A bounded protobuf fuzz of every served method (issue 18): random bytes and mutated
valid requests (bit flips, truncations, junk fields, huge varints, integer fields at their
extremes) sent raw through ``channel.unary_unary``/``unary_stream``/... with identity
serializers, as a hostile client sends them.

What must hold after each: no INTERNAL or UNKNOWN and no traceback in the daemon's log
(an unhandled exception in the server), nothing written for a refused request (the home's
files and the tenant's sessions and records as before), and the daemon still serving
(health, and a tenant's list). Bytes that do not decode are INVALID_ARGUMENT (grpc's own
answer was INTERNAL "Exception deserializing request!"), and an integer field out of its
range is INVALID_ARGUMENT naming it.

``AGENTSESSIONS_TORTURE=N`` sends N messages of each kind per method (default 30); the
generator is seeded by the method's name, so a failure reproduces.
"""

from __future__ import annotations

import os
import random
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from needs import need

grpc = need("grpc", "grpc")
need("grpc_health", "grpc")
need("grpc_reflection", "grpc")

import hostile
from google.protobuf import descriptor
from google.protobuf.message import DecodeError, Message
from hostile import REGISTRY, SESSIONS, Method

from agentsessions.wire.gen import session_pb2 as pb

MESSAGES = int(os.environ.get("AGENTSESSIONS_TORTURE", "30"))
BROKEN = (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN)
METHODS = [*SESSIONS.values(), *REGISTRY.values()]
IDS = [m.full for m in METHODS]
FOLLOW_WAIT = 0.5  # a Follow a mutant made endless is cut here (the client's deadline)


@pytest.fixture
def target(daemon: Any, full: str) -> dict[str, Any]:
    """What the method's valid requests aim at, fresh for each test (so a mutant that
    deletes or forks harms no other test): a session of the fuzz tenant with one turn, and
    for Import its export, for the registry a harness of the tenant's own."""
    fuzz = daemon.tenants["fuzz"]
    made = daemon.send(SESSIONS["Exec"], pb.ExecRequest(inputs=[hostile.text("seed")]), fuzz)
    assert made.code == grpc.StatusCode.OK, made
    uid = pb.ExecUpdate.FromString(made.replies[0]).session.metadata.uid
    out: dict[str, Any] = {"uid": uid, "export": b"", "harness": "fuzz-" + uid[-8:]}
    if full == "Sessions.Import":
        exported = daemon.send(SESSIONS["Export"], pb.ExportRequest(session=uid), fuzz)
        out["export"] = b"".join(pb.ExportChunk.FromString(r).data for r in exported.replies)
    if full.startswith("HarnessRegistry."):
        register = REGISTRY["RegisterHarness"]
        reg = daemon.send(register, hostile.sample(register, out["harness"]), fuzz)
        assert reg.code == grpc.StatusCode.OK, reg
    return out


def _valid(method: Method, target: dict[str, Any]) -> list[Message]:
    """The method's well-formed request(s) aimed at the fuzz tenant's own things."""
    if method.full == "Sessions.Import":
        return [pb.ImportChunk(data=target["export"], project="fuzz", name="imported")]
    if method.service.endswith("HarnessRegistry"):
        aim = target["harness"]
    elif method.full in ("Sessions.CreateSession", "Sessions.ListSessions"):
        aim = "fuzz"
    else:
        aim = target["uid"]
    built = hostile.sample(method, aim)
    return built if isinstance(built, list) else [built]


def _decodes(method: Method, data: bytes) -> bool:
    try:
        method.request.FromString(data)
    except DecodeError:
        return False
    return True


def _random_bytes(rng: random.Random, valid: bytes) -> bytes:
    return rng.randbytes(rng.randint(1, 96))


def _bit_flips(rng: random.Random, valid: bytes) -> bytes:
    data = bytearray(valid or b"\0")
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(data))
        data[i] ^= 1 << rng.randrange(8)
    return bytes(data)


def _truncation(rng: random.Random, valid: bytes) -> bytes:
    return valid[: rng.randrange(max(1, len(valid)))]


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _huge_varint(rng: random.Random, valid: bytes) -> bytes:
    """A varint field (a known number, or any) with a huge or over-long value appended."""
    field = rng.randint(1, 8)
    value = rng.choice([2**63 - 1, 2**63, 2**64 - 1, 2**70, 2**31])
    return valid + _varint(field << 3) + _varint(value)


def _junk_field(rng: random.Random, valid: bytes) -> bytes:
    """An unknown or mistyped length-delimited field, its length sometimes a lie."""
    field = rng.choice([1, 2, 3, 1000, 1006, 9999])
    body = rng.randbytes(rng.randint(0, 32))
    length = rng.choice([len(body), len(body) + 5, 2**31])
    return valid + _varint(field << 3 | 2) + _varint(length) + body


MUTATORS: list[Callable[[random.Random, bytes], bytes]] = [
    _bit_flips,
    _truncation,
    _huge_varint,
    _junk_field,
]


def _payloads(method: Method, target: dict[str, Any], decodable: bool) -> Iterator[bytes]:
    """Up to :data:`MESSAGES` distinct payloads that do (or do not) decode as the request."""
    rng = random.Random(zlib.crc32(method.full.encode()) + decodable)
    valid = [m.SerializeToString() for m in _valid(method, target)]
    makers = MUTATORS if decodable else [_random_bytes, *MUTATORS]
    seen: set[bytes] = set()
    for _ in range(MESSAGES * 40):
        if len(seen) >= MESSAGES:
            return
        data = rng.choice(makers)(rng, rng.choice(valid))
        if data in seen or _decodes(method, data) != decodable:
            continue
        seen.add(data)
        yield data


def _send(daemon: Any, method: Method, data: bytes) -> Any:
    # only Follow may wait for ever by design; any other call gets the full hang guard, so
    # a turn still running when the client gives up cannot write after the check
    wait = FOLLOW_WAIT if method.name == "Follow" else hostile.CALL_WAIT
    return daemon.call(method, [data] if method.client_streaming else data,
                       daemon.tenants["fuzz"], timeout=wait)  # fmt: skip


def _batch(daemon: Any, method: Method, payloads: Iterator[bytes]) -> list[tuple[bytes, Any]]:
    """Send each payload; assert what must hold after each (see the module docstring): the
    home's files after every refused one (the journals and session files: what a write
    changes), and when the whole batch was refused the tenant's sessions and records too
    (a list per call would double the run). Follow's calls, which each wait a slice of the
    server's, go out together: Follow writes nothing, so its check is once, at the end."""
    fuzz = daemon.tenants["fuzz"]
    files, census = daemon.fingerprint(), daemon.census(fuzz)
    tracebacks = daemon.log_text().count("Traceback")
    if method.name == "Follow":
        with ThreadPoolExecutor(max_workers=8) as pool:
            sent = list(pool.map(lambda data: (data, _send(daemon, method, data)), payloads))
        assert daemon.fingerprint() == files, (method.full, "wrote")
    else:
        sent = []
        for data in payloads:
            got = _send(daemon, method, data)
            sent.append((data, got))
            if got.code == grpc.StatusCode.OK:
                files = daemon.fingerprint()
                continue
            assert daemon.fingerprint() == files, (method.full, data.hex(), got, "wrote")
    if all(got.code != grpc.StatusCode.OK for _, got in sent):
        assert daemon.census(fuzz) == census, (method.full, "a refused request wrote")
    assert daemon.alive(), f"the daemon stopped serving after {method.full}'s fuzz"
    log = daemon.log_text()
    assert log.count("Traceback") == tracebacks, f"an unhandled exception: {log[-3000:]}"
    return sent


@pytest.mark.parametrize("full", IDS)
def test_undecodable_requests_are_refused_and_write_nothing(
    daemon: Any, target: dict[str, Any], full: str
) -> None:
    """Bytes that are no request of the method: refused (never OK), nothing written, the
    daemon still serving."""
    method = {m.full: m for m in METHODS}[full]
    sent = _batch(daemon, method, _payloads(method, target, decodable=False))
    assert len(sent) >= MESSAGES // 2, "the generator found too few undecodable payloads"
    assert all(got.code != grpc.StatusCode.OK for _, got in sent)


@pytest.mark.parametrize("full", IDS)
def test_undecodable_requests_are_invalid_argument(
    daemon: Any, target: dict[str, Any], full: str
) -> None:
    """... and refused INVALID_ARGUMENT, not INTERNAL (an undecodable request is the
    caller's error)."""
    method = {m.full: m for m in METHODS}[full]
    for data in _payloads(method, target, decodable=False):
        got = _send(daemon, method, data)
        assert got.code == grpc.StatusCode.INVALID_ARGUMENT, (data.hex(), got)


@pytest.mark.parametrize("full", IDS)
def test_mutated_requests_never_break_the_daemon(
    daemon: Any, target: dict[str, Any], full: str
) -> None:
    """Mutants of a valid request that still decode: answered with a status of the tree
    (never INTERNAL or UNKNOWN), nothing written when refused, the daemon serving."""
    method = {m.full: m for m in METHODS}[full]
    sent = _batch(daemon, method, _payloads(method, target, decodable=True))
    broken = [(data.hex(), got) for data, got in sent if got.code in BROKEN]
    assert not broken, broken


def _int_fields(message: Message) -> list[Any]:
    kinds = (descriptor.FieldDescriptor.TYPE_INT32, descriptor.FieldDescriptor.TYPE_INT64)
    return [
        f for f in message.DESCRIPTOR.fields
        if f.type in kinds and not f.is_repeated
    ]  # fmt: skip


def _extremes(field: Any) -> list[int]:
    bits = 31 if field.type == descriptor.FieldDescriptor.TYPE_INT32 else 63
    return [-1, -(2**bits), 2**bits - 1]


@pytest.mark.parametrize("full", IDS)
def test_integer_fields_at_their_extremes_are_range_checked(
    daemon: Any, target: dict[str, Any], full: str
) -> None:
    """Every integer field of the request at -1, its minimum and its maximum: a negative
    one is INVALID_ARGUMENT naming the field (a negative ``deadline_unix`` is a deadline
    past: DEADLINE_EXCEEDED), a huge one any status of the tree; nothing written when
    refused."""
    method = {m.full: m for m in METHODS}[full]
    base = _valid(method, target)[0]
    cases: list[tuple[str, int, bytes]] = []
    for field in _int_fields(base):
        for value in _extremes(field):
            request = type(base)()
            request.CopyFrom(base)
            setattr(request, field.name, value)
            cases.append((field.name, value, request.SerializeToString()))
    sent = _batch(daemon, method, iter(data for _, _, data in cases))
    for (name, value, _), (_, got) in zip(cases, sent, strict=True):
        assert got.code not in BROKEN, (name, value, got)
        if value >= 0:
            continue
        if name == "deadline_unix":
            assert got.code == grpc.StatusCode.DEADLINE_EXCEEDED, (name, value, got)
        else:
            assert got.code == grpc.StatusCode.INVALID_ARGUMENT, (name, value, got)
            assert name in got.details, (name, value, got.details)
