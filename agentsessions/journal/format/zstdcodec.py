"""Zstandard compression with a pure-Python fallback chain.

Backends, in order of preference: stdlib ``compression.zstd`` (Python 3.14+), ``pyzstd``,
``backports.zstd``, then the ``zstd`` command line through a subprocess. Inside a stdlib
zipapp the compiled modules cannot import, so the command line is the last resort; with none
of them every call raises :class:`~agentsessions.errors.UnavailableError`.

Invariants:
- :func:`decompress` never returns more than ``max_size`` bytes: a larger output (a zstd
  bomb or a hostile input) raises :class:`~agentsessions.errors.FormatError` without
  materialising it; truncated or malformed input raises FormatError too;
- :func:`decompress_stream` reads and yields in bounded pieces (:data:`STREAM_PIECE`), so a
  stream of any size costs a few MiB of memory; it refuses, as soon as it is passed, more
  than ``max_size`` output bytes or more than ``max_ratio`` output bytes per input byte;
- :func:`decompress` accepts concatenated frames and skips skippable frames, so the output
  of every backend is byte-identical;
- :func:`compress` writes one frame with a content checksum;
- a *seekable* file (:func:`encode_seekable`) is a plain zstd stream: independent frames,
  then one skippable frame holding the seek table, the caller's metadata and a fixed-size
  footer at the very end, so ``zstd -d`` yields exactly the original bytes and a reader
  finds the table from the end in one small read.
"""

from __future__ import annotations

import contextlib
import importlib
import struct
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from agentsessions.errors import FormatError, UnavailableError

if TYPE_CHECKING:
    import subprocess

__all__ = [
    "SKIPPABLE_MAGIC_BASE",
    "Compressor",
    "backend",
    "can_compress",
    "compress",
    "decompress",
    "decompress_stream",
    "one_checksummed_frame",
    "skippable_frame",
]

SKIPPABLE_MAGIC_BASE = 0x184D2A50
"""Skippable frames use magic ``0x184D2A50 | n`` for n in 0..15; decoders skip them."""

_MODULES = (
    ("compression.zstd", "compression.zstd"),
    # before pyzstd: pyzstd 0.20 is a shim over backports.zstd whose import also loads
    # asyncio (9 MiB of RSS, ~25 ms): every process that reads a sealed segment paid it
    ("backports.zstd", "backports.zstd"),
    ("pyzstd", "pyzstd"),
)
_CLI_TIMEOUT = 120.0
_NO_CODEC = "no zstd codec: install pyzstd or the zstd command line"

_backend: str | None = None
"""The chosen backend name (tests may set it: ``"pyzstd"``, ``"cli"``, ``"none"``...)."""


def _detect() -> str:
    for name, module in _MODULES:
        try:
            importlib.import_module(module)
        except ImportError:
            continue
        return name
    import shutil  # the command line is the last resort: no start pays for shutil

    if shutil.which("zstd"):
        return "cli"
    return "none"


def backend() -> str:
    """The name of the backend in use: a module name, ``"cli"``, or ``"none"``."""
    global _backend
    if _backend is None:
        _backend = _detect()
    return _backend


def can_compress() -> bool:
    """True when some backend can compress (and decompress) here."""
    return backend() != "none"


def _module() -> Any:
    return importlib.import_module(backend())


def _unavailable() -> UnavailableError:
    return UnavailableError(_NO_CODEC, hint="pip install pyzstd, or apt install zstd")


def compress(data: bytes, level: int = 3) -> bytes:
    """Compress ``data`` into one zstd frame (with a content checksum)."""
    name = backend()
    if name == "none":
        raise _unavailable()
    if name == "cli":
        return _cli(["-q", "-c", f"-{level}", "--check"], data, None)
    mod = _module()
    if name == "pyzstd":
        params = {mod.CParameter.compressionLevel: level, mod.CParameter.checksumFlag: 1}
        return bytes(mod.compress(data, params))
    params = {
        mod.CompressionParameter.compression_level: level,
        mod.CompressionParameter.checksum_flag: 1,
    }
    return bytes(mod.compress(data, options=params))


class Compressor:
    """Streaming compression into one zstd frame with a content checksum, as :func:`compress`
    writes it: :meth:`compress` pieces, then :meth:`flush` once; each returns the output ready
    so far. Memory stays bounded whatever the input's size (the export of a long session)."""

    def __init__(self, level: int = 3) -> None:
        name = backend()
        if name == "none":
            raise _unavailable()
        self._cli: _CliCompressor | None = None
        if name == "cli":
            self._cli = _CliCompressor(level)
            return
        mod = _module()
        if name == "pyzstd":
            params = {mod.CParameter.compressionLevel: level, mod.CParameter.checksumFlag: 1}
            self._comp = mod.ZstdCompressor(params)
        else:
            self._comp = mod.ZstdCompressor(
                options={
                    mod.CompressionParameter.compression_level: level,
                    mod.CompressionParameter.checksum_flag: 1,
                }
            )
        self._end = mod.ZstdCompressor.FLUSH_FRAME

    def compress(self, data: bytes) -> bytes:
        """Feed ``data``; returns compressed bytes ready so far (often none)."""
        if self._cli is not None:
            return self._cli.compress(data)
        return bytes(self._comp.compress(data))

    def flush(self) -> bytes:
        """End the frame; returns the rest of the compressed stream."""
        if self._cli is not None:
            return self._cli.flush()
        return bytes(self._comp.flush(self._end))

    def abort(self) -> None:
        """Give up on the stream (the caller failed): stops a ``zstd`` process, if any."""
        if self._cli is not None:
            self._cli.abort()


class _CliCompressor:
    """``zstd -c`` fed on the caller's thread, its output collected by a reader thread and
    handed back at each call (a pipe never fills, so neither side blocks the other)."""

    def __init__(self, level: int) -> None:
        self._proc = _zstd_process(["-q", "-c", f"-{level}", "--check"])
        self._out: list[bytes] = []
        self._errors: list[bytes] = []
        self._lock = threading.Lock()
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._threads = [
            threading.Thread(target=self._collect, args=(self._proc.stdout,), daemon=True),
            threading.Thread(target=_drain, args=(self._proc.stderr, self._errors), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _collect(self, pipe: Any) -> None:
        while piece := pipe.read1(1 << 20):
            with self._lock:
                self._out.append(piece)

    def _take(self) -> bytes:
        with self._lock:
            out, self._out = b"".join(self._out), []
        return out

    def compress(self, data: bytes) -> bytes:
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(data)
        except OSError as exc:
            self._proc.kill()
            raise FormatError(f"zstd command failed: {exc}") from None
        return self._take()

    def flush(self) -> bytes:
        assert self._proc.stdin is not None
        with contextlib.suppress(OSError):
            self._proc.stdin.close()
        code = self._proc.wait(timeout=_CLI_TIMEOUT)
        self._close()
        if code != 0:
            msg = b"".join(self._errors).decode("utf-8", "replace").strip()
            raise FormatError(f"zstd command failed ({code}): {msg or 'no output'}")
        return self._take()

    def abort(self) -> None:
        self._proc.kill()
        self._proc.wait(timeout=_CLI_TIMEOUT)
        self._close()

    def _close(self) -> None:
        for thread in self._threads:
            thread.join(timeout=_CLI_TIMEOUT)
        for pipe in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


_FRAME_MAGIC = b"\x28\xb5\x2f\xfd"


def one_checksummed_frame(data: bytes | memoryview) -> bool:
    """True when ``data`` is exactly one zstd frame whose header sets the content checksum
    flag: decoding it then verifies every restored byte against XXH64 (RFC 8878 3.1.1).

    Walks the frame header and block headers only (a few per MiB); the decoder checks the
    rest.
    """
    data = memoryview(data)
    if len(data) < 6 or data[:4] != _FRAME_MAGIC:
        return False
    fhd = data[4]
    fcs_flag, single, did_flag = fhd >> 6, (fhd >> 5) & 1, fhd & 3
    if not fhd & 0x04 or fhd & 0x08:  # no checksum, or the reserved bit
        return False
    fcs_size = (1 if single else 0, 2, 4, 8)[fcs_flag]
    pos = 5 + (0 if single else 1) + (0, 1, 2, 4)[did_flag] + fcs_size
    while pos + 3 <= len(data):
        head = int.from_bytes(data[pos : pos + 3], "little")
        kind, size = (head >> 1) & 3, head >> 3
        if kind == 3:
            return False
        pos += 3 + (1 if kind == 1 else size)
        if head & 1:
            return pos + 4 == len(data)
    return False


def decompress(data: bytes | memoryview, max_size: int) -> bytes:
    """Decompress concatenated zstd frames (skipping skippable ones), at most ``max_size`` bytes.

    Raises FormatError on malformed or truncated input, or when the output would exceed
    ``max_size``.
    """
    name = backend()
    if name == "none":
        raise _unavailable()
    if not data:
        return b""
    if name == "cli":
        return _cli(["-d", "-q", "-c"], bytes(data), max_size)
    return _decompress_module(_module(), bytes(data), max_size)


def _decompress_module(mod: Any, data: bytes, max_size: int) -> bytes:
    # one frame that fits (every seekable chunk): hand back the decoder's bytes, no copies
    dec = mod.ZstdDecompressor()
    try:
        first = dec.decompress(data, max_length=max_size + 1)
    except mod.ZstdError as exc:
        raise FormatError(f"malformed zstd data: {exc}") from exc
    if dec.eof and not dec.unused_data and len(first) <= max_size:
        return bytes(first)
    out = bytearray()
    while data:
        dec = mod.ZstdDecompressor()
        try:
            while True:
                room = max_size - len(out)
                chunk = dec.decompress(data, max_length=room + 1)
                data = b""
                out += chunk
                if len(out) > max_size:
                    raise FormatError(f"zstd data decompresses to more than {max_size} bytes")
                if dec.eof or (dec.needs_input and not chunk):
                    break
        except mod.ZstdError as exc:
            raise FormatError(f"malformed zstd data: {exc}") from exc
        if not dec.eof:
            raise FormatError("truncated zstd data")
        data = dec.unused_data
    return bytes(out)


STREAM_PIECE = 1 << 20
"""Largest piece :func:`decompress_stream` yields (and the most it holds decoded at once)."""
_STREAM_READ = 64 << 10
_RATIO_SLACK = 1 << 20  # tiny inputs may expand a lot in absolute terms; that is harmless

Read = Callable[[int], bytes]
"""``read(n)``: up to ``n`` more bytes of a stream, ``b""`` at its end."""


def decompress_stream(read: Read, max_size: int, *, max_ratio: int) -> Iterator[bytes]:
    """Decompress the zstd stream ``read`` returns, piece by piece (concatenated frames,
    skippable frames skipped).

    Raises FormatError on malformed or truncated data, or as soon as the output passes
    ``max_size`` bytes or ``max_ratio`` times the input read so far (a zstd bomb is
    refused after a bounded amount of work, never materialised).
    """
    name = backend()
    if name == "none":
        raise _unavailable()
    total_in, total_out = [0], 0
    counted = _counting(read, total_in)
    pieces = _stream_cli(counted) if name == "cli" else _stream_module(_module(), counted)
    try:
        for piece in pieces:
            total_out += len(piece)
            if total_out > max_size:
                raise FormatError(f"zstd data decompresses to more than {max_size} bytes")
            if total_out > max_ratio * total_in[0] + _RATIO_SLACK:
                raise FormatError(
                    f"zstd data expands more than {max_ratio} times: refused as a "
                    "decompression bomb"
                )
            yield piece
    finally:
        close = getattr(pieces, "close", None)
        if close is not None:
            close()


def _counting(read: Read, total: list[int]) -> Read:
    def counted(n: int) -> bytes:
        data = read(n)
        total[0] += len(data)
        return data

    return counted


def _stream_module(mod: Any, read: Read) -> Iterator[bytes]:
    dec = mod.ZstdDecompressor()
    data = read(_STREAM_READ)
    if not data:
        return
    while True:
        if dec.eof:
            data = dec.unused_data or read(_STREAM_READ)
            if not data:
                return  # the input ends after a whole frame
            dec = mod.ZstdDecompressor()
        elif dec.needs_input and not data:
            data = read(_STREAM_READ)
            if not data:
                raise FormatError("truncated zstd data")
        try:
            out = dec.decompress(data, max_length=STREAM_PIECE)
        except mod.ZstdError as exc:
            raise FormatError(f"malformed zstd data: {exc}") from exc
        data = b""
        if out:
            yield bytes(out)


def _stream_cli(read: Read) -> Iterator[bytes]:
    """``zstd -d`` fed from ``read`` on a thread, its output read in bounded pieces."""
    with _zstd_process(["-d", "-q", "-c"]) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        errors: list[bytes] = []
        helpers = [
            threading.Thread(target=_feed_from, args=(proc.stdin, read), daemon=True),
            threading.Thread(target=_drain, args=(proc.stderr, errors), daemon=True),
        ]
        for thread in helpers:
            thread.start()
        finished = False
        try:
            while piece := proc.stdout.read(STREAM_PIECE):
                yield piece
            finished = True
        finally:
            if not finished:  # the consumer stopped (a cap, a bad record): stop zstd too
                proc.kill()
            code = proc.wait(timeout=_CLI_TIMEOUT)
            for thread in helpers:
                thread.join(timeout=_CLI_TIMEOUT)
    if code != 0:
        msg = b"".join(errors).decode("utf-8", "replace").strip()
        raise FormatError(f"zstd command failed ({code}): {msg or 'malformed data'}")


def _zstd_process(args: list[str]) -> subprocess.Popen[bytes]:
    """The ``zstd`` command line started with ``args``, its three streams piped;
    UnavailableError when it is not installed. The modules it needs are imported here: only
    a host without a zstd module runs it, and no other start pays for them."""
    import shutil
    import subprocess

    exe = shutil.which("zstd")
    if exe is None:
        raise _unavailable()
    pipe = subprocess.PIPE
    return subprocess.Popen([exe, *args], stdin=pipe, stdout=pipe, stderr=pipe)


def _feed_from(pipe: Any, read: Read) -> None:
    with contextlib.suppress(OSError):
        while data := read(_STREAM_READ):
            pipe.write(data)
    with contextlib.suppress(OSError):
        pipe.close()


def _cli(args: list[str], data: bytes, max_size: int | None) -> bytes:
    """Run the ``zstd`` command line, feeding ``data`` and reading at most ``max_size + 1``."""
    with _zstd_process(args) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        errors: list[bytes] = []
        helpers = [
            threading.Thread(target=_feed, args=(proc.stdin, data), daemon=True),
            threading.Thread(target=_drain, args=(proc.stderr, errors), daemon=True),
        ]
        for thread in helpers:
            thread.start()
        out = _read_limited(proc.stdout, None if max_size is None else max_size + 1)
        too_big = max_size is not None and len(out) > max_size
        if too_big:
            proc.kill()
        code = proc.wait(timeout=_CLI_TIMEOUT)
        for thread in helpers:
            thread.join(timeout=_CLI_TIMEOUT)
    if too_big:
        raise FormatError(f"zstd data decompresses to more than {max_size} bytes")
    if code != 0:
        msg = b"".join(errors).decode("utf-8", "replace").strip()
        raise FormatError(f"zstd command failed ({code}): {msg or 'malformed data'}")
    return out


def _read_limited(pipe: Any, limit: int | None) -> bytes:
    out = bytearray()
    while limit is None or len(out) < limit:
        piece = pipe.read(65536 if limit is None else min(65536, limit - len(out)))
        if not piece:
            break
        out += piece
    return bytes(out)


def _drain(pipe: Any, sink: list[bytes]) -> None:
    sink.append(pipe.read())


def _feed(pipe: Any, data: bytes) -> None:
    with contextlib.suppress(OSError):
        pipe.write(data)
    with contextlib.suppress(OSError):
        pipe.close()


def skippable_frame(content: bytes, nibble: int = 0) -> bytes:
    """A zstd skippable frame (magic ``0x184D2A50 | nibble``) holding ``content``."""
    if not 0 <= nibble <= 15:
        raise ValueError("skippable frame nibble must be 0..15")
    return struct.pack("<II", SKIPPABLE_MAGIC_BASE | nibble, len(content)) + content
