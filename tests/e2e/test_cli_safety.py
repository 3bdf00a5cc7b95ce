"""Privacy and safety as a user meets them: no guessed remote model, no user content in the
lock, no raw terminal escapes, no zstd bomb that eats the machine's memory."""

from __future__ import annotations

import random
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from clirun import Run, clean_env
from needs import need

from agentsessions.journal.stores.file.store import FileStore
from agentsessions.journal.stores.store import SessionMeta, new_uid

if TYPE_CHECKING:
    from clirun import Cli

Unchanged = Callable[[Path], Callable[[], None]]

EXIT_USAGE = 2
EXIT_BUSY = 6
DEVNULL = subprocess.DEVNULL
SECRET = "my secret 4f1c"
KNOWN = "(known: echo, openai, scripted)"


def sessions(home: Path) -> list[str]:
    """Every session directory under ``home`` (a session exists once its directory does)."""
    root = home / "sessions"
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP listener standing in for a model endpoint; a test asserts nobody connected."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    try:
        yield server
    finally:
        server.close()


def connected(server: socket.socket) -> bool:
    """True if any client connected to ``server`` (non-blocking: the client has exited)."""
    try:
        conn, _ = server.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def endpoint_env(server: socket.socket) -> dict[str, str]:
    port = server.getsockname()[1]
    return {"MODEL_BASE_URL": f"http://127.0.0.1:{port}/v1", "MODEL_API_KEY": "sk-test"}


# --- 1. a model spec names its provider ----------------------------------------------------


@pytest.mark.parametrize("spec", ["scriptd:seed=7", "gpt-4o-mini"])
def test_a_sessionless_exec_with_an_unknown_model_creates_and_sends_nothing(
    cli: Cli, home: Path, listener: socket.socket, spec: str
) -> None:
    args = ("exec", "--harness", "chat", "--model", spec, "--input", SECRET)
    run = cli.run(*args, env=endpoint_env(listener)).fails(EXIT_USAGE)
    assert "unknown model provider" in run.err and KNOWN in run.err
    assert sessions(home) == []
    assert not connected(listener)


def test_exec_on_a_session_refuses_an_unknown_model_before_writing(
    cli: Cli, home: Path, listener: socket.socket, unchanged: Unchanged
) -> None:
    uid = cli.create("--harness", "chat")
    check = unchanged(home)
    run = cli.run(
        "exec", uid, "--model", "scriptd:seed=7", "-i", SECRET, env=endpoint_env(listener)
    )
    run.fails(EXIT_USAGE)
    check()
    assert not connected(listener)


def test_a_session_recorded_with_a_bare_model_name_is_not_sent_to_openai(
    cli: Cli, home: Path, listener: socket.socket, unchanged: Unchanged
) -> None:
    # sessions created before specs had to name a provider may carry a bare name
    store = FileStore(home)
    try:
        meta = SessionMeta(uid=new_uid(), harness="chat", model="gpt-4o", create_time_ns=1)
        uid = store.create(meta).uid
    finally:
        store.close()
    check = unchanged(home)
    run = cli.run("exec", uid, "-i", SECRET, env=endpoint_env(listener)).fails(EXIT_USAGE)
    assert "openai:gpt-4o" in run.err  # the hint says how to keep using that model
    check()
    assert not connected(listener)


def test_create_refuses_an_unknown_model_and_creates_nothing(cli: Cli, home: Path) -> None:
    run = cli.fast("create", "--model", "scriptd:seed=7").fails(EXIT_USAGE)
    assert KNOWN in run.err
    assert sessions(home) == []
    assert cli.fast("create", "--model", "openai:gpt-4o-mini").code == 0


@pytest.mark.parametrize("command", ["exec", "create"])
def test_model_help_documents_the_spec_syntax(cli: Cli, command: str) -> None:
    out = " ".join(cli.fast(command, "--help").ok().out.split())
    assert "SPEC names the provider" in out
    assert "openai:MODEL" in out and "scripted" in out


# --- 2. the lock names its holder without user content -------------------------------------


def test_a_busy_session_names_its_holder_without_the_holders_input(cli: Cli, home: Path) -> None:
    uid = cli.create("--harness", "chat")
    slow = ("--harness", "chat", "--model", "scripted:seed=7,delay=600", "--input", SECRET)
    argv = [sys.executable, "-m", "agentsessions", "--home", str(home), "exec", uid, *slow]
    lock_file = home / "sessions" / uid / "LOCK"
    holder = subprocess.Popen(argv, env=clean_env(), stdout=DEVNULL, stderr=DEVNULL)
    try:
        while f'"pid": {holder.pid}'.encode() not in _read(lock_file):
            assert holder.poll() is None, "the holder exited before taking the lock"
            time.sleep(0.02)
        raw = _read(lock_file)
        run = cli.run("exec", uid, "--input", "second").fails(EXIT_BUSY)
    finally:
        holder.kill()
        holder.wait()
    assert SECRET.encode() not in raw and b"--input" not in raw
    assert SECRET not in run.err
    assert f"pid {holder.pid} on " in run.err and ": agentsessions exec, since " in run.err


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


# --- 4. a zstd bomb is refused in bounded memory -------------------------------------------

EXIT_FORMAT = 10
MEMORY_CAP = 100 << 20


def bomb(path: Path, prefix: bytes, fill: bytes, size: int = 1 << 30) -> None:
    """``prefix`` then ``fill`` repeated to ``size`` bytes, zstd-compressed by streaming."""
    import pyzstd

    comp = pyzstd.ZstdCompressor(1)
    piece = fill * ((4 << 20) // len(fill))
    with path.open("wb") as out:
        out.write(comp.compress(prefix))
        for _ in range(size // len(piece)):
            out.write(comp.compress(piece))
        out.write(comp.flush())


def peak_rss(cli: Cli, *args: str) -> tuple[Run, int]:
    """Run the CLI in a child and return its result and peak resident memory in bytes."""
    script = (
        "import resource, subprocess, sys\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stdout.write(p.stdout); sys.stderr.write(p.stderr)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
        "sys.exit(p.returncode)\n"
    )
    argv = [sys.executable, "-c", script, sys.executable, "-m", "agentsessions"]
    argv += ["--home", str(cli.home), *args]
    proc = subprocess.run(argv, env=clean_env(), capture_output=True, text=True, timeout=300)
    *err, rss = proc.stderr.splitlines()
    return Run(args, proc.returncode, proc.stdout, "\n".join(err) + "\n"), int(rss) * 1024


@pytest.mark.parametrize(
    ("prefix", "fill"),
    [
        (b"", b"\0"),  # one endless line
        (b'{"agentsessions_export":1,"records":1,"last_seq":1,"last_hash":""}\n', b"\n"),
        (b"", b'{"seq":"1"}  '),  # an endless LogRecord line
    ],
)
@pytest.mark.parametrize("command", ["import", "verify"])
def test_a_zstd_bomb_is_refused_in_bounded_memory(
    cli: Cli, home: Path, tmp_path: Path, prefix: bytes, fill: bytes, command: str
) -> None:
    need("pyzstd", "")
    path = tmp_path / "bomb.agx"
    bomb(path, prefix, fill)
    assert path.stat().st_size < 1 << 20  # a small file ...
    run, peak = peak_rss(cli, command, str(path))
    run.fails(EXIT_FORMAT)  # ... refused as not a journal,
    assert peak < MEMORY_CAP, f"peak RSS {peak >> 20} MiB"  # without holding what it expands to
    assert sessions(home) == []


def _record_line(seq_text: bytes, size: int) -> bytes:
    """An export record line whose payload is a valid envelope with ``size`` bytes of text
    (hex digits: they compress about 2:1, so the file is no bomb)."""
    event = b'{"kind":"EVENT_OUTPUT","message":{"parts":[{"text":{"text":"'
    event += random.Random(size).randbytes(size // 2).hex().encode()
    event += b'"}}],"role":"assistant"}}'
    return b'1 {"event":' + event + b',"prev_hash":"","seq":"' + seq_text + b'"}\n'


@pytest.mark.parametrize("command", ["import", "verify"])
def test_records_near_the_line_cap_are_checked_in_bounded_memory(
    cli: Cli, home: Path, tmp_path: Path, command: str
) -> None:
    """Main held each line three or four times over (the line buffer, a stripped copy, the
    payload and the event sliced out of it, the previous record): two 23 MiB lines peaked
    at ~160 MiB. Now at most about one line and one payload are alive at a time."""
    pyzstd = need("pyzstd", "")
    header = b'{"agentsessions_export":1,"records":2,"last_seq":2,"last_hash":""}\n'
    path = tmp_path / "wide.agx"
    comp = pyzstd.ZstdCompressor(3)
    with path.open("wb") as out:
        out.write(comp.compress(header))
        for _ in range(2):  # the second repeats seq 1: the walk must reach it to refuse it
            out.write(comp.compress(_record_line(b"1", 23 << 20)))
        out.write(comp.flush())
    run, peak = peak_rss(cli, command, str(path))
    assert run.code in (7, 9), run.err  # import: over the commit limit; verify: seq gap
    assert peak < MEMORY_CAP, f"peak RSS {peak >> 20} MiB"
    assert sessions(home) == []


def test_import_refuses_a_record_over_the_commit_limit_before_creating_anything(
    cli: Cli, home: Path, tmp_path: Path
) -> None:
    """Main verified the file, created the session, failed the append (exit 7, 'nothing was
    written') and left a soft-deleted session behind."""
    from agentsessions.journal.stores.file.store import StoreOptions
    from agentsessions.journal.tools.exchange import export_session
    from agentsessions.v1 import construct

    big = FileStore(tmp_path / "big", options=StoreOptions(max_commit_bytes=8 << 20))
    uid = big.create(SessionMeta(uid=new_uid())).uid
    with big.writer(uid) as writer:
        text = "x" * (5 << 20)
        writer.append([construct.output_event(construct.text_message("assistant", text))])
    export_session(big, uid, tmp_path / "big.agx")
    big.close()
    cli.fast("verify", str(tmp_path / "big.agx")).ok()  # a valid journal ...
    run = cli.fast("import", str(tmp_path / "big.agx")).fails(7)  # ... this store cannot hold
    assert "record seq 1 is " in run.err and "nothing was imported" in run.err
    assert sessions(home) == []


def _logrecord_line(event: dict[str, object]) -> bytes:
    """A LogRecord JSON line claiming ``event``'s true content hash (a valid genesis record)."""
    import hashlib
    import json

    from agentsessions.journal.format import canonical

    payload = canonical.envelope(canonical.canonical_json(event), "", 1)
    digest = hashlib.sha256(payload).hexdigest()
    record = {"seq": "1", "prev_hash": "", "content_hash": digest, "fence": "1", "event": event}
    return json.dumps(record, ensure_ascii=False).encode() + b"\n"


def _wide_part(kind: str, size: int) -> dict[str, object]:
    """A message part of about ``size`` bytes of JSON: hex text, or base64 file bytes."""
    import base64

    rng = random.Random(size)
    if kind == "text":
        return {"text": {"text": rng.randbytes(size // 2).hex()}}
    return {"file": {"mime": "application/octet-stream", "bytes": base64.b64encode(
        rng.randbytes(size * 3 // 4)).decode()}}  # fmt: skip


def _output(part: dict[str, object]) -> dict[str, object]:
    return {"kind": "EVENT_OUTPUT", "message": {"parts": [part], "role": "assistant"}}


@pytest.mark.parametrize("kind", ["text", "bytes"])
@pytest.mark.parametrize("command", ["import", "verify"])
def test_a_logrecord_line_near_the_line_cap_is_checked_in_bounded_memory(
    cli: Cli, home: Path, tmp_path: Path, command: str, kind: str
) -> None:
    """Main peaked at ~121 MiB on one 22 MiB LogRecord line (the line, its decoded text, the
    event's canonical JSON and the envelope built from it, all alive at once) and at ~820
    MiB on base64 file bytes (the canonical-base64 regex kept state per character)."""
    from agentsessions.journal.tools.exportfile import MAX_LINE_BYTES

    path = tmp_path / "wide.jsonl"
    path.write_bytes(_logrecord_line(_output(_wide_part(kind, MAX_LINE_BYTES - (64 << 10)))))
    assert MAX_LINE_BYTES - (1 << 20) < path.stat().st_size <= MAX_LINE_BYTES
    run, peak = peak_rss(cli, command, str(path))
    if command == "verify":
        run.ok()  # the widest line the format accepts verifies ...
    else:
        run.fails(7)  # ... and is over this store's commit limit, refused before creating
        assert sessions(home) == []
    assert peak < MEMORY_CAP, f"peak RSS {peak >> 20} MiB"


def test_a_logrecord_line_of_wide_characters_is_bounded_or_refused(
    cli: Cli, tmp_path: Path
) -> None:
    """ASCII text with one emoji decodes to four bytes a character: main built a str four
    times the line (in the UTF-8 check and in the JSON decode). Text that fits the decoded
    budget verifies in bounded memory; wider text is refused (exit 10) naming the limit."""
    from agentsessions.journal.tools.exportfile import MAX_DECODED_BYTES

    for size, code in ((MAX_DECODED_BYTES // 4 - (256 << 10), 0), (MAX_DECODED_BYTES // 3, 10)):
        text = "a" * size + "\U0001f600"
        path = tmp_path / f"emoji-{size}.jsonl"
        path.write_bytes(_logrecord_line(_output({"text": {"text": text}})))
        run, peak = peak_rss(cli, "verify", str(path))
        if code:
            run.fails(EXIT_FORMAT)
            assert f"over the limit of {MAX_DECODED_BYTES}" in run.err
        else:
            run.ok()
        assert peak < MEMORY_CAP, f"peak RSS {peak >> 20} MiB"


@pytest.mark.parametrize("kind", ["Text", "Bytes"])
@pytest.mark.parametrize("command", ["import", "verify"])
def test_a_go_record_array_near_its_cap_is_checked_in_bounded_memory(
    cli: Cli, home: Path, tmp_path: Path, command: str, kind: str
) -> None:
    """A Go record array is one JSON document, read whole: its lines, the joined document,
    the decoded value and every envelope were alive together; base64 was decoded and
    re-encoded into three more copies."""
    import base64
    import json

    from agentsessions.journal.tools.exportfile import MAX_GO_BYTES

    size = MAX_GO_BYTES - (64 << 10)
    rng = random.Random(size)
    if kind == "Text":
        part: dict[str, object] = {"Text": {"Text": rng.randbytes(size // 2).hex()}}
    else:
        part = {"File": {"MIME": "a/b", "Bytes": base64.b64encode(rng.randbytes(size * 3 // 4))
                         .decode()}}  # fmt: skip
    event = {"Kind": "OUTPUT", "Message": {"Role": "assistant", "Parts": [part]}}
    record = {"Seq": 1, "PrevHash": "", "Hash": "0" * 64, "Fence": 1, "Event": event}
    path = tmp_path / "wide.json"
    path.write_bytes(json.dumps([record]).encode())
    assert MAX_GO_BYTES - (1 << 20) < path.stat().st_size <= MAX_GO_BYTES
    run, peak = peak_rss(cli, command, str(path))
    assert run.code == (7 if command == "import" else 9), run.err  # too large; a wrong hash
    assert peak < MEMORY_CAP, f"peak RSS {peak >> 20} MiB"
    assert sessions(home) == []
