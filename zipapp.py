#!/usr/bin/env python3
"""Build ``dist/agentsessions.pyz``: the whole CLI in one file that needs only Python 3.11+.

    python zipapp.py [--output PATH]

Run the result with ``python -I dist/agentsessions.pyz ...`` on a machine where nothing is
installed. The archive holds:

- the ``agentsessions`` package from this source tree (with ``data/*.json``), and the
  reference ``harnesses`` package (found by name through the registry's convention);
- the pure-Python runtime dependencies, copied from their installed distributions (found
  with :mod:`importlib.metadata`), with their METADATA and licence files;
- a legacy ``mod.pyc`` beside every ``mod.py`` (unchecked-hash pycs, which zipimport loads
  without a source check; they cut start-up several-fold because zipimport cannot cache
  bytecode). An interpreter of another version ignores them and compiles the ``.py``.

Compiled extensions (msgspec, pyzstd, backports.zstd) are left out on purpose: a zipapp cannot
import them, and the package falls back to pure Python for canonical JSON and decoding and to
the ``zstd`` command line for zstd. So are ``agentsessions/server`` and ``agentsessions/wire``
(gRPC needs grpcio and protobuf, both compiled): the single file has no gRPC features. A
distribution that ships compiled code fails the build.

The build is reproducible: entries are sorted, timestamps and permissions fixed, so rebuilding
from the same tree and the same installed packages gives the same bytes. Standard library only.
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import os
import py_compile
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent
PACKAGE = "agentsessions"
HARNESSES = "harnesses"
DEFAULT_OUTPUT = ROOT / "dist" / "agentsessions.pyz"

DISTRIBUTIONS = (
    "typer",  # 0.28 vendors click
    "rich",
    "markdown-it-py",  # rich
    "mdurl",  # markdown-it-py
    "pygments",  # rich
    "shellingham",  # typer
    "annotated-doc",  # typer
    "rfc8785",  # canonical JSON, pure Python
)
"""Pure-Python distributions the CLI needs at run time."""

LEFT_OUT = ("msgspec", "pyzstd", "backports.zstd")
"""Compiled accelerators a zipapp cannot import; the package has pure fallbacks."""

LEFT_OUT_SUBPACKAGES = ("server", "wire")
"""Subpackages that need compiled extensions throughout (the gRPC server, the protobuf code);
the zipapp has no gRPC features, so their code would be dead weight."""

COMPILED_SUFFIXES = (".so", ".pyd", ".dylib", ".dll")
SKIPPED_SUFFIXES = (".pyc", ".pyo")
LICENSE_MARKERS = ("LICENSE", "LICENCE", "COPYING", "NOTICE", "AUTHORS")
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
SHEBANG = b"#!/usr/bin/env python3\n"

MAIN = b'''\
"""Entry point of agentsessions.pyz: the agentsessions command line."""

import sys

if sys.version_info < (3, 11):
    sys.exit("agentsessions needs Python 3.11 or newer")

from agentsessions.cli.app import main

main()
'''


class BuildError(Exception):
    """The archive cannot be built as promised (for example a dependency is not pure)."""


def _wanted(parts: tuple[str, ...]) -> bool:
    """True for files of a package tree that belong in the archive."""
    if "__pycache__" in parts or parts[-1].endswith(SKIPPED_SUFFIXES):
        return False
    if parts[-1].endswith(COMPILED_SUFFIXES):
        raise BuildError(f"{'/'.join(parts)} is a compiled extension; a zipapp cannot load it")
    return True


def package_files(root: Path = ROOT, package: str = PACKAGE) -> dict[str, bytes]:
    """Every file of the source package, keyed by its archive name."""
    files: dict[str, bytes] = {}
    for path in sorted((root / package).rglob("*")):
        rel = path.relative_to(root)
        if len(rel.parts) > 1 and rel.parts[1] in LEFT_OUT_SUBPACKAGES:
            continue
        if path.is_file() and _wanted(rel.parts):
            files[rel.as_posix()] = path.read_bytes()
    if f"{package}/data/go-v0.1.2-completed.json" not in files:
        raise BuildError(f"{package}/data/go-v0.1.2-completed.json is missing")
    return files


def _harness_files(root: Path) -> dict[str, bytes]:
    """The reference harnesses (top-level ``harnesses``), found by the registry's convention."""
    files = {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted((root / HARNESSES).rglob("*.py"))
        if _wanted(path.relative_to(root).parts)
    }
    if f"{HARNESSES}/echo.py" not in files:
        raise BuildError(f"{HARNESSES}/echo.py is missing")
    return files


def _is_metadata_to_keep(parts: tuple[str, ...]) -> bool:
    name = parts[-1]
    return name == "METADATA" or "licenses" in parts or name.upper().startswith(LICENSE_MARKERS)


def distribution_files(name: str) -> dict[str, bytes]:
    """The importable files of one installed distribution, plus its METADATA and licences."""
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        raise BuildError(f"{name} is not installed; pip install it first") from None
    files: dict[str, bytes] = {}
    for entry in dist.files or ():
        parts = PurePosixPath(entry).parts
        if not parts or parts[0] in ("..", "bin"):
            continue
        if parts[0].endswith(".dist-info") and not _is_metadata_to_keep(parts):
            continue
        if _wanted(parts):
            files["/".join(parts)] = Path(str(dist.locate_file(entry))).read_bytes()
    if not any(arc.endswith(".py") for arc in files):
        raise BuildError(f"{name}: no Python files found in its installed distribution")
    return files


def compile_pycs(sources: dict[str, bytes]) -> dict[str, bytes]:
    """Legacy ``mod.pyc`` files (unchecked hash) beside each ``mod.py`` of ``sources``."""
    out: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory(prefix="agentsessions-pyc-") as tmp:
        src, dst = Path(tmp, "m.py"), Path(tmp, "m.pyc")
        for arcname, data in sorted(sources.items()):
            if not arcname.endswith(".py"):
                continue
            src.write_bytes(data)
            try:
                py_compile.compile(
                    str(src),
                    cfile=str(dst),
                    dfile=arcname,
                    doraise=True,
                    optimize=0,  # keep docstrings: typer builds --help from them
                    invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
                )
            except py_compile.PyCompileError as exc:
                print(f"warning: {arcname} left as source: {exc.msg}", file=sys.stderr)
                continue
            out[arcname + "c"] = dst.read_bytes()
    return out


def collect(root: Path = ROOT, distributions: Iterable[str] = DISTRIBUTIONS) -> dict[str, bytes]:
    """All archive entries: package, dependencies, ``__main__.py`` and their pycs."""
    files = package_files(root)
    files.update(_harness_files(root))
    for name in distributions:
        for arcname, data in distribution_files(name).items():
            if arcname in files and files[arcname] != data:
                raise BuildError(f"{arcname} is provided twice with different content")
            files[arcname] = data
    files["__main__.py"] = MAIN
    files.update(compile_pycs(files))
    return files


def write_archive(files: dict[str, bytes], out: Path) -> None:
    """Write ``files`` as an executable zip with sorted entries and fixed metadata."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    try:
        with tmp.open("wb") as fh:
            fh.write(SHEBANG)
            with zipfile.ZipFile(fh, "w") as archive:
                for arcname in sorted(files):
                    info = zipfile.ZipInfo(arcname, date_time=ZIP_EPOCH)
                    info.create_system = 3  # Unix, whatever the build machine
                    info.external_attr = 0o100644 << 16
                    info.compress_type = zipfile.ZIP_DEFLATED
                    archive.writestr(info, files[arcname], compresslevel=9)
        tmp.chmod(0o755)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def build(out: Path = DEFAULT_OUTPUT, root: Path = ROOT) -> dict[str, int]:
    """Build the archive at ``out``; returns counts (files, pycs, bytes)."""
    files = collect(root)
    write_archive(files, out)
    pycs = sum(1 for name in files if name.endswith(".pyc"))
    return {"files": len(files), "pycs": pycs, "bytes": out.stat().st_size}


def main(argv: list[str] | None = None) -> int:
    """Command line: build, then print the size and the build time."""
    parser = argparse.ArgumentParser(description="Build the agentsessions single-file zipapp.")
    parser.add_argument(
        "-o", "--output", type=Path, default=DEFAULT_OUTPUT, help="archive to write"
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        stats = build(args.output)
    except BuildError as exc:
        print(f"zipapp.py: error: {exc}", file=sys.stderr)
        return 1
    elapsed = time.monotonic() - started
    print(
        f"built {args.output}: {stats['bytes'] / 1e6:.2f} MB, {stats['files']} entries "
        f"({stats['pycs']} pyc for Python {sys.version_info.major}.{sys.version_info.minor}), "
        f"in {elapsed:.1f} s; left out (compiled): {', '.join(LEFT_OUT)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
