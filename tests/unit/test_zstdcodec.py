"""zstd codec: every backend gives identical bytes, bombs are refused, seekable files work."""

from __future__ import annotations

import importlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from needs import missing

from agentsessions.errors import FormatError, UnavailableError
from agentsessions.journal.format import zstdcodec, zstdseek


def _available() -> list[str]:
    names = []
    for name in ("compression.zstd", "pyzstd", "backports.zstd"):
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        names.append(name)
    if shutil.which("zstd"):
        names.append("cli")
    return names


BACKENDS = _available()
DATA = b"".join(b'{"event":{"n":%d,"text":"hello world"},"seq":"%d"}' % (i, i) for i in range(3000))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setattr(zstdcodec, "_backend", request.param)
    yield request.param


def test_round_trip(backend: str) -> None:
    packed = zstdcodec.compress(DATA)
    assert len(packed) < len(DATA) // 3
    assert zstdcodec.decompress(packed, len(DATA)) == DATA
    assert zstdcodec.decompress(b"", 10) == b""
    assert zstdcodec.backend() == backend and zstdcodec.can_compress()


def test_backends_read_each_other(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    packed = zstdcodec.compress(DATA, level=1)
    for other in BACKENDS:
        monkeypatch.setattr(zstdcodec, "_backend", other)
        assert zstdcodec.decompress(packed, len(DATA)) == DATA


def test_concatenated_and_skippable_frames(backend: str) -> None:
    blob = (
        zstdcodec.compress(DATA[:1000])
        + zstdcodec.skippable_frame(b"ignored", 3)
        + zstdcodec.compress(DATA[1000:])
        + zstdcodec.skippable_frame(b"", 15)
    )
    assert zstdcodec.decompress(blob, len(DATA)) == DATA


def test_bomb_is_refused(backend: str) -> None:
    bomb = zstdcodec.compress(bytes(8 << 20))
    assert len(bomb) < 4096
    with pytest.raises(FormatError, match="more than"):
        zstdcodec.decompress(bomb, 1 << 20)
    assert len(zstdcodec.decompress(bomb, 8 << 20)) == 8 << 20


@pytest.mark.parametrize("bad", [b"garbage garbage!", b"\x28\xb5\x2f\xfd\x00"])
def test_malformed_and_truncated_input(backend: str, bad: bytes) -> None:
    with pytest.raises(FormatError):
        zstdcodec.decompress(bad, 100)
    with pytest.raises(FormatError):
        zstdcodec.decompress(zstdcodec.compress(DATA)[:-7], len(DATA))


def test_no_backend_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zstdcodec, "_backend", "none")
    assert not zstdcodec.can_compress()
    with pytest.raises(UnavailableError, match="no zstd codec: install pyzstd or the zstd"):
        zstdcodec.compress(b"x")
    with pytest.raises(UnavailableError):
        zstdcodec.decompress(b"x", 1)


def test_detection_falls_back_to_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.import_module

    def no_modules(name: str, package: str | None = None) -> object:
        if "zstd" in name:
            raise ImportError(name)
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", no_modules)
    monkeypatch.setattr(zstdcodec, "_backend", None)
    assert zstdcodec.backend() == ("cli" if shutil.which("zstd") else "none")
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    monkeypatch.setattr(zstdcodec, "_backend", None)
    assert zstdcodec.backend() == "none"


# -- seekable container ---------------------------------------------------------------------
def _seekable(tmp_path: Path) -> tuple[bytes, bytes, Path]:
    cuts = [(1, 0), (100, 30000), (200, 90000), (300, 120000)]
    blob = zstdseek.encode_seekable(DATA, cuts, b"META")
    path = tmp_path / "x.zst"
    path.write_bytes(blob)
    return DATA, blob, path


def test_seekable_layout_and_random_access(backend: str, tmp_path: Path) -> None:
    raw, blob, _ = _seekable(tmp_path)
    assert zstdcodec.decompress(blob, len(raw)) == raw
    assert blob[-8:] == zstdseek.SEEK_FOOTER_MAGIC
    calls: list[tuple[int, int]] = []

    def read_at(n: int, off: int) -> bytes:
        calls.append((n, off))
        return blob[off : off + n]

    table = zstdseek.read_seek_table(read_at, len(blob))
    assert len(calls) == 1 and table.meta == b"META" and table.raw_size == len(raw)
    assert [e.key for e in table.entries] == [1, 100, 200, 300]
    assert table.chunk_for(0) == 0 and table.chunk_for(150) == 1 and table.chunk_for(10**9) == 3
    chunks = list(zstdseek.read_chunks(read_at, table, 2))
    assert b"".join(chunks) == raw[90000:]
    calls.clear()
    zstdseek.read_seek_table(read_at, len(blob), guess=64)
    assert len(calls) == 2  # the table did not fit the first read


@pytest.mark.skipif(not shutil.which("zstd"), reason="zstd command line not installed")
def test_zstd_command_line_restores_the_original(tmp_path: Path) -> None:
    raw, _, path = _seekable(tmp_path)
    out = subprocess.run(["zstd", "-d", "-q", "-c", str(path)], capture_output=True, check=True)
    assert out.stdout == raw


def test_seekable_damage_is_a_format_error(tmp_path: Path) -> None:
    _, blob, _ = _seekable(tmp_path)
    size = len(blob)
    for pos in (size - 1, size - 20, size - 60, size - 80):
        bad = bytearray(blob)
        bad[pos] ^= 0x01
        with pytest.raises(FormatError):
            zstdseek.read_seek_table(lambda n, o, b=bytes(bad): b[o : o + n], size)
    with pytest.raises(FormatError):
        zstdseek.read_seek_table(lambda n, o: blob[o : o + n], size + 1)
    with pytest.raises(ValueError):
        zstdseek.encode_seekable(DATA, [(1, 5)], b"")


def test_hostile_chunk_sizes_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    blob = zstdseek.encode_seekable(bytes(4096), [(1, 0), (2, 2048)], b"")
    table = zstdseek.read_seek_table(lambda n, o: blob[o : o + n], len(blob))
    monkeypatch.setattr(zstdseek, "MAX_CHUNK", 1000)
    with pytest.raises(FormatError, match="limit"):
        list(zstdseek.read_chunks(lambda n, o: blob[o : o + n], table))


def test_one_checksummed_frame_is_recognised(backend: str) -> None:
    """Readers of .seg.zst rely on this: exactly one frame, content checksum on."""
    frame = zstdcodec.compress(DATA)
    assert zstdcodec.one_checksummed_frame(frame)
    assert zstdcodec.one_checksummed_frame(zstdcodec.compress(b""))
    assert not zstdcodec.one_checksummed_frame(frame + zstdcodec.compress(b"x"))  # two frames
    assert not zstdcodec.one_checksummed_frame(frame[:-1])  # truncated checksum
    assert not zstdcodec.one_checksummed_frame(frame + b"\0")  # trailing bytes
    assert not zstdcodec.one_checksummed_frame(zstdcodec.skippable_frame(b"meta", 0))
    assert not zstdcodec.one_checksummed_frame(b"")
    unchecked = bytearray(frame)
    unchecked[4] &= ~0x04  # the same frame with its checksum flag cleared
    assert not zstdcodec.one_checksummed_frame(bytes(unchecked))


def test_frames_without_a_checksum_are_refused_by_checked_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    modules = [b for b in BACKENDS if b != "cli"]
    if not modules:
        missing("a zstd module (pyzstd, backports.zstd)", "")
    mod = importlib.import_module(modules[0])
    monkeypatch.setattr(zstdseek, "compress", lambda data, level=3: bytes(mod.compress(data)))
    blob = zstdseek.encode_seekable(DATA, [(1, 0), (2, 40000)], b"")  # module default: no checksum
    table = zstdseek.read_seek_table(lambda n, o: blob[o : o + n], len(blob))
    assert b"".join(zstdseek.read_chunks(lambda n, o: blob[o : o + n], table)) == DATA
    with pytest.raises(FormatError, match="content checksum"):
        list(zstdseek.read_chunks(lambda n, o: blob[o : o + n], table, checksummed=True))


def test_a_seek_table_claiming_a_huge_chunk_is_refused_before_any_read() -> None:
    # a damaged or hostile .seg.zst must not make a reader allocate anywhere near 1 GiB
    assert zstdseek.MAX_CHUNK <= 32 << 20
    entry = zstdseek.SeekEntry(key=1, raw_offset=0, comp_offset=0, comp_len=64)
    table = zstdseek.SeekTable((entry,), b"", raw_size=1 << 30, skip_offset=64)

    def read_at(n: int, offset: int) -> bytes:
        raise AssertionError("read before the claimed size was checked")

    with pytest.raises(FormatError, match="over the"):
        list(zstdseek.read_chunks(read_at, table))


def test_decompress_stream_refuses_a_bomb_by_ratio_in_pieces() -> None:
    import io

    data = zstdcodec.compress(b"\0" * (64 << 20))
    stream = io.BytesIO(data)
    pieces = zstdcodec.decompress_stream(stream.read, 1 << 40, max_ratio=100)
    with pytest.raises(FormatError, match="decompression bomb"):
        for piece in pieces:
            assert len(piece) <= zstdcodec.STREAM_PIECE
    assert zstdcodec.decompress(data, 64 << 20) == b"\0" * (64 << 20)


def test_a_streamed_frame_decompresses_like_a_one_shot_one(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Export streams through Compressor: one checksummed frame every backend reads back."""
    data = b"".join(b"%d line of an export\n" % i for i in range(200_000))
    comp = zstdcodec.Compressor()
    out = b"".join(comp.compress(data[at : at + 65536]) for at in range(0, len(data), 65536))
    out += comp.flush()
    assert zstdcodec.one_checksummed_frame(out)
    for other in BACKENDS:
        monkeypatch.setattr(zstdcodec, "_backend", other)
        assert zstdcodec.decompress(out, len(data)) == data


def test_an_aborted_stream_stops_its_compressor(backend: str) -> None:
    comp = zstdcodec.Compressor()
    comp.compress(b"x" * 1000)
    comp.abort()  # the cli backend's zstd process is killed and reaped, not left waiting
    if comp._cli is not None:
        assert comp._cli._proc.returncode is not None
