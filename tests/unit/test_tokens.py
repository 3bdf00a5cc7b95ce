"""The home's bearer tokens (``agentsessions.sessions.tokens``): made random with a prefix,
kept hashed in a 0600 file written durably, checked in constant time, revoked and expired
as the file says, never lost by two concurrent writers."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from agentsessions.errors import (
    InvalidArgumentError,
    TokenNotFoundError,
    TokensCorruptError,
    UnauthenticatedError,
)
from agentsessions.journal.format.durable import CrashFileSystem
from agentsessions.sessions.tokens import (
    TOKEN_PREFIX,
    Principal,
    TokenStore,
    hash_token,
    parse_duration,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000_000_000_000_000

    def __call__(self) -> int:
        return self.now


def test_a_token_is_prefixed_random_and_kept_only_as_its_hash(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    text, info = store.create(projects=["acme"], name="ci")
    other, _ = store.create(projects=["acme"])
    assert text.startswith(f"{TOKEN_PREFIX}{info.id}_") and text != other
    assert len(text.split("_", 2)[2]) == 43  # 32 random bytes, base64url
    raw = store.path.read_text()
    assert text not in raw and text.split("_", 2)[2] not in raw
    assert hash_token(text) in raw
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    assert store.authenticate(text) == info
    assert Principal.of(info) == Principal("ci", frozenset({"acme"}), info.id, "acme")


def test_the_principal_defaults_to_the_tokens_id(tmp_path: Path) -> None:
    _, info = TokenStore(tmp_path).create(projects=["b", "a", "b"])
    assert info.principal == f"token-{info.id}" and info.projects == ("b", "a")


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("", "malformed bearer token"),
        ("agst_", "malformed bearer token"),
        ("agst_0123456789ab", "malformed bearer token"),
        ("agst_XYZ3456789ab_secret", "malformed bearer token"),
        ("ghp_0123456789ab_secret", "malformed bearer token"),
        ("agst_0123456789ab_secret", "invalid bearer token"),  # no such id
    ],
)
def test_a_malformed_or_unknown_token_is_unauthenticated(
    tmp_path: Path, token: str, message: str
) -> None:
    TokenStore(tmp_path).create(projects=["a"])
    with pytest.raises(UnauthenticatedError, match=message) as info:
        TokenStore(tmp_path).authenticate(token)
    assert info.value.grpc_code == "UNAUTHENTICATED" and info.value.exit_code == 30


def test_a_wrong_secret_for_a_real_id_is_refused(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    text, info = store.create(projects=["a"])
    with pytest.raises(UnauthenticatedError, match=r"^invalid bearer token$"):
        store.authenticate(f"{TOKEN_PREFIX}{info.id}_{'A' * 43}")
    assert store.authenticate(text).id == info.id


def test_expiry_and_revocation_follow_the_file(tmp_path: Path) -> None:
    clock = Clock()
    server = TokenStore(tmp_path, clock=clock)  # the server's reader
    cli = TokenStore(tmp_path, clock=clock)  # another process's writer
    short, s_info = cli.create(projects=["a"], expires_in=60)
    long, l_info = cli.create(projects=["a"])
    assert server.authenticate(short) == s_info
    clock.now += 60 * 1_000_000_000
    with pytest.raises(UnauthenticatedError, match=f"token {s_info.id} expired"):
        server.authenticate(short)
    assert server.authenticate(long) == l_info
    revoked = cli.revoke(l_info.id)
    with pytest.raises(UnauthenticatedError, match=f"token {l_info.id} was revoked"):
        server.authenticate(long)  # seen without a restart: the file changed
    assert cli.revoke(l_info.id) == revoked  # idempotent
    states = {t.id: t.state(clock.now) for t in cli.list()}
    assert states == {s_info.id: "expired", l_info.id: "revoked"}


def test_revoking_an_unknown_id_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(TokenNotFoundError) as info:
        TokenStore(tmp_path).revoke("0123456789ab")
    assert info.value.exit_code == 3 and info.value.hint == "agentsessions token list"


def test_concurrent_creates_lose_no_token(tmp_path: Path) -> None:
    made: list[str] = []
    lock = threading.Lock()

    def work() -> None:
        store = TokenStore(tmp_path)  # each its own store, as separate processes would be
        for _ in range(5):
            text, _ = store.create(projects=["a"])
            with lock:
                made.append(text)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store = TokenStore(tmp_path)
    assert len(store.list()) == 20
    assert all(store.authenticate(text) for text in made)


def test_a_crash_mid_write_keeps_the_old_file_whole(tmp_path: Path) -> None:
    first, _ = TokenStore(tmp_path).create(projects=["a"])
    crashing = CrashFileSystem(crash_at_op=3)  # dies inside the atomic replace
    with pytest.raises(BaseException):  # noqa: B017 - SimulatedCrash is a BaseException
        TokenStore(tmp_path, fs=crashing).create(projects=["a"])
    store = TokenStore(tmp_path)
    assert [t.id for t in store.list()] == [store.authenticate(first).id]


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"[]",
        b'{"format": "agentsessions.tokens", "version": 2, "tokens": []}',
        b'{"format": "agentsessions.tokens", "version": 1, "tokens": [{"id": "x"}]}',
    ],
)
def test_a_damaged_token_file_is_reported_never_rewritten(tmp_path: Path, body: bytes) -> None:
    (tmp_path / "tokens.json").write_bytes(body)
    for call in (
        lambda: TokenStore(tmp_path).list(),
        lambda: TokenStore(tmp_path).create(projects=["a"]),
        lambda: TokenStore(tmp_path).authenticate("agst_0123456789ab_x"),
    ):
        with pytest.raises(TokensCorruptError) as info:
            call()
        assert info.value.exit_code == 8 and "tokens.json" in info.value.message
    assert (tmp_path / "tokens.json").read_bytes() == body


def test_a_missing_file_means_no_token_is_valid(tmp_path: Path) -> None:
    with pytest.raises(UnauthenticatedError, match="invalid bearer token") as info:
        TokenStore(tmp_path / "nowhere").authenticate("agst_0123456789ab_secret")
    assert "token create" in info.value.hint
    assert not (tmp_path / "nowhere").exists()  # reading creates nothing


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90), ("15m", 900), ("2h", 7200),
                                               ("30d", 2_592_000), ("1w", 604_800)])  # fmt: skip
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0d", "-1d", "3y", "d", "1.5h", "10"])
def test_bad_durations_are_refused(text: str) -> None:
    with pytest.raises(InvalidArgumentError, match="invalid duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"projects": []}, "at least one project"),
        ({"projects": ["a/b"]}, "invalid project name"),
        ({"projects": ["a"], "name": "bad\nname"}, "invalid token name"),
        ({"projects": ["a"], "expires_in": 0}, "expiry must be positive"),
    ],
)
def test_a_bad_create_writes_nothing(
    tmp_path: Path, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        TokenStore(tmp_path).create(**kwargs)  # type: ignore[arg-type]
    assert not (tmp_path / "tokens.json").exists()


def test_the_file_is_versioned_json(tmp_path: Path) -> None:
    TokenStore(tmp_path).create(projects=["a"], name="n")
    body = json.loads((tmp_path / "tokens.json").read_text())
    assert (body["format"], body["version"]) == ("agentsessions.tokens", 1)
    assert set(body["tokens"][0]) >= {"id", "name", "projects", "sha256", "created_ns"}


def test_the_admin_flag_is_kept_shown_and_carried_by_the_principal(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    admin_text, admin = store.create(projects=["a"], admin=True)
    plain_text, plain = store.create(projects=["a"])
    assert (admin.admin, plain.admin) == (True, False)
    assert admin.to_json()["admin"] is True and plain.to_json()["admin"] is False
    again = TokenStore(tmp_path)  # read back from the file
    assert again.authenticate(admin_text).admin and not again.authenticate(plain_text).admin
    assert Principal.of(admin).is_admin and not Principal.of(plain).is_admin
    assert Principal("operator", None).is_admin  # a listener without auth: the operator


def test_a_record_without_the_admin_flag_is_not_admin_and_a_bad_one_is_damage(
    tmp_path: Path,
) -> None:
    text, _ = TokenStore(tmp_path).create(projects=["a"])
    body = json.loads((tmp_path / "tokens.json").read_text())
    del body["tokens"][0]["admin"]  # a file written before the flag existed
    (tmp_path / "tokens.json").write_text(json.dumps(body))
    assert TokenStore(tmp_path).authenticate(text).admin is False
    body["tokens"][0]["admin"] = "yes"
    (tmp_path / "tokens.json").write_text(json.dumps(body))
    with pytest.raises(TokensCorruptError):
        TokenStore(tmp_path).list()
