"""Command-line start-up: CPU time of whole commands against ``python -c pass``.

    python bench/startup.py            # 7 interleaved rounds, a home with 50 sessions
    python bench/startup.py --rounds 3
    VENV/bin/python bench/startup.py --installed   # VENV's own agentsessions script, as pip
                                                   # installed it (not editable), no checkout

Each round runs every command once, in turn (so a drift in the machine's speed hits all of
them alike), as a fresh process; the CPU time of a run is its user+sys time as the kernel
accounts it for the reaped child (``os.wait4``). Printed: the median CPU seconds of each
command and its ratio to ``python -c pass`` in the same round (median of the per-round
ratios). Targets (issue 21): ``--help`` and ``list`` <= 3x, a one-turn ``exec`` <= 5x. No
number here is asserted; ``tests/e2e/test_cli_startup.py`` pins what each command imports.

Commands run as an installed package does: with bytecode. ``PYTHONDONTWRITEBYTECODE`` is
dropped and ``PYTHONPYCACHEPREFIX`` points at a temporary directory that the warm-up fills,
so a checkout (or a caller's environment) that never writes ``.pyc`` files does not charge
every run for compiling the sources (with it set, ``list`` measured 7.7x instead of 5.8x).
Output goes to ``/dev/null`` (a pipe's path: ``list`` and ``get`` draw without rich there;
a terminal still gets rich's tables).

Measured (issue 8; 9 interleaved rounds, 50 sessions, a shared 2-core machine; medians):

    command               before   after (x python -c pass)
    --help                 5.00x    3.03x  drawn on rich's core (no markdown-it, no pygments),
                                           no subcommand built (their summaries suffice)
    list                   5.83x    3.65x  no schema build, no rich to a pipe, one command built
    list --json            4.52x    3.63x
    get UID                5.97x    4.30x  no schema build, no rich to a pipe, one command built
    exec UID --input x     5.58x    5.54x  the turn itself: schema, controller, harness, model

Measured (issue 21; a shared 2-core machine at load 12-15, so CPU times run ~1.4x high;
medians of 9 interleaved rounds; main and this change paired, the same home):

    command      main     now  (x python -c pass, editable venv)   now/main paired
    --help      5.52x   5.48x                                       0.996
    list        6.59x   6.54x                                       0.968
    get UID     8.43x   7.90x  no controller for the memory probe   0.935
    exec        10.57x  9.66x  no OpenAI provider (http, ssl, email); 0.892
                               the schema's checkers load as bytecode (v1/gen/schemafast.py)

An editable install's finder costs every interpreter ~9 ms, ``python -c pass`` included;
``--installed`` in a non-editable venv measured ``python -c pass`` at ~10 ms and --help
11.3x, list 14.1x, get 15.8x, exec 19.0x of it. What is left, by ``-X importtime``: typer
alone is ~2.5x ``python -c pass`` (editable venv; ~5x installed) and rich's core for the
help page ~1x more; ``list`` imports ~54 dataclasses (45 frozen), ``exec`` ~86, whose
generated methods are compiled at import (~20% of importing the engine: 156 functions);
``exec`` and ``get`` still scan package entry points for the harness (the registry prefers
a plugin's name, and the project's own harnesses are entry points).

Measured (issue 21, second stop; a shared 2-core machine at load 9-12; medians of three
runs of 5 interleaved rounds each, x python -c pass of the same round):

    command        editable   installed
    --help           1.19x      2.00x   no typer (cli.fast), no rich to a pipe (cli.plainhelp)
    list             6.63x     12.80x   only list's module imported (cli.commands)
    get UID          7.55x     15.64x
    exec             9.03x     18.59x
    floor: typer     2.59x      5.00x   python -c "import typer.main"
    floor: list's    5.13x     10.56x   the engine on the file store, imported, nothing run
    floor: exec's    5.96x     11.79x   the same, the controller and the echo harness

The floors show ``list`` <= 3x and ``exec`` <= 5x out of reach from the CLI: importing the
library modules they run on costs more than the target before a word is parsed (the run
itself, open and list, is ~4 ms). Of that import, dataclass creation is about a third (52
dataclasses on list's path, 72 on exec's, each method compiled by ``exec`` at import:
~20 ms and ~27 ms under that load); the rest is ~130 modules' bytecode and their stdlib.

Measured (issue 21, third stop; a shared 2-core machine at load 2-7; medians of 5 rounds,
editable venv; the pairs are main and this change in one run, 7 interleaved rounds each,
a home of 2 sessions, three runs, median):

    command        before   after   paired main -> this
    --help          1.23x   1.10x   (installed: 2.15x -> 1.81x: no typing)
    list            6.61x   5.55x   5.50x -> 4.55x  no typer: cli.fast reads list against
                                                    tables generated from its typer options
    get UID         7.67x   6.69x   6.69x -> 5.74x  no typer, the same way
    exec            9.31x   7.88x   8.13x -> 7.06x  no typer, the same way
    floor: list's libraries 2.32-2.46x              sqlite3, msgspec, dataclasses... before ours

The engine's collaborators made on first use (turns, claims, approvals...) take 10 modules
off list's path: list 4.70x -> 4.56x paired, get 6.00x -> 5.89x, near this machine's noise.

Installed against editable: an editable venv's finder costs every interpreter ~8 ms
(pathlib, urllib.parse, ipaddress, fnmatch), ``python -c pass`` included, which halves
the ratios' base; pip's console script imports ``re`` (~0.7x of an installed ``python -c
pass``) before our entry. Neither is ours. What was (typing in the root page's modules,
~0.4x) is gone. The floors say it: ``list`` cannot reach 3x while its run needs the
libraries' ~2.4x and 97 of our modules (51 dataclasses in 23 of them), nor ``exec`` 5x
above its engine's ~5.5-6x.

Measured (issue 21, fourth stop; a shared 2-core machine with 5 other jobs, load ~7;
main and this change paired: each bench run alternately on main's tree and on this one,
3 runs of 5 rounds each, medians; x python -c pass, editable venv):

    command          main -> now
    list            5.54x -> 3.39x  no engine: the file store's listing alone
                                    (sessions.listing, stores/file/lister); no msgspec
                                    (session.json decoded by journal.format.strictjson);
                                    no segment codec or readers (journal.format.logend);
                                    no record cipher, no v1 vocabularies: 98 -> 52 modules
    list --json     5.59x -> 3.64x
    get UID         5.94x -> 5.88x  unchanged (paired, 11 rounds: 0.995 of main)
    exec            7.02x -> 6.73x  shutil, tomllib, subprocess, the tools' workload
                                    modules and the Sessions Protocol only where used
    floor: list's modules    3.05x  (imported, nothing run; the run adds ~0.3x)
    floor: list's libraries  2.35x -> 1.97x  (no msgspec: it was ~1x on its own)
    floor: dataclasses       1.41x
    floor: exec's engine     5.83x -> 5.61x

Where list's time goes now (-X importtime, cProfile): python itself 1x; the libraries its
run calls ~0.9x more, of which ``dataclasses``' import is ~0.4x; its 52 modules ~1.2x, of
which creating their 23 dataclasses (each method compiled by ``exec`` at import) is about
half; the run (50 rows: session.json with its 12 field sums, the TAIL hint, a scandir)
~0.3x. ``list`` <= 3x therefore needs its value classes built without ``dataclasses``
(its import and the creations: ~0.9x together), which this stop did not do (SessionMeta,
SessionInfo, Tail, Session... have ``dataclasses.replace``, ``asdict`` and equality
users). ``exec`` <= 5x is below the floor of its engine's imports alone (~5.6x: the
controller, the schema, msgspec, the store's writers and the echo harness, nothing run),
whose largest single part is the same: 82 dataclasses created on exec's path (controller
.spi alone 11).

Measured (issue 21, fifth stop; a shared 2-core machine with 5 other jobs, load 4-5;
main and this change paired: each bench run alternately on main's tree and on this one,
3 runs of 5 rounds each, medians; x python -c pass, editable venv):

    command          main -> now
    --help          1.12x -> 1.12x  unchanged (no value class on the root page)
    list            3.47x -> 2.67x  no dataclasses import (nor inspect, ast, dis,
                                    tokenize); its 23 value classes made by
                                    agentsessions.valueclass: no method compiled at import
    list --json     3.43x -> 2.69x
    get UID         5.74x -> 4.23x
    exec            6.77x -> 4.97x  its 82 value classes likewise; a class's first 32
                                    constructions bind by its field list, so a one-turn exec
                                    compiles 1 __init__, not 43 (~5 ms)
    floor: list's modules    2.98x -> 2.14x
    floor: exec's engine     5.55x -> 3.96x
    floor: dataclasses       1.37x (the import list and exec no longer pay)

Installed (``--installed``: each tree pip-installed, not editable, into its own venv over
the same libraries; python -c pass ~8 ms there against ~17 ms with the editable finder, so
every ratio is about twice the editable one; paired, 3 runs of 5 rounds, medians):

    command          main -> now        CPU
    --help          1.95x -> 1.97x     15 -> 15 ms
    list            7.30x -> 5.88x     56 -> 44 ms
    get UID        12.99x -> 9.18x    100 -> 69 ms
    exec           15.13x -> 11.06x   118 -> 84 ms
    floor: list's modules   6.56x -> 4.74x
    floor: exec's engine   11.95x -> 8.71x

So installed, ``list`` <= 3x (~24 ms) stays out of reach while importing its modules
alone costs ~4.7x, and ``exec`` <= 5x while its engine's imports cost ~8.7x.

Where the time went (-X importtime, medians of 3, loaded machine): our modules' own import
time for list 48.3 -> 26.7 ms and for exec 133.9 -> 56.8 ms (the largest items before:
controller.spi 9.7 ms, controller.approvals 8.2, journal.stores.store 7.8, v1.results 7.0,
sessions.values 6.5, all dataclass creation). Making the 82 classes now costs 2.2-3.4 ms in
all (27-41 us each; a dataclass ~300 us). What is left of exec is the libraries' imports
(msgspec with typing_extensions and inspect, sqlite3, socket, re) and ~150 modules'
bytecode, then the turn itself.

Measured (issue 21, sixth stop; a shared 2-core machine at load ~5; main and this change
paired: each bench run alternately on main's tree and on this one, 3 runs of 5 rounds,
medians; x python -c pass):

    command          editable        installed (non-editable venv, pip's bytecode)
    --help          1.11x -> 1.11x   1.92x -> 1.93x
    list            2.64x -> 2.58x   5.63x -> 5.60x
    get UID         4.05x -> 3.97x   8.97x -> 8.62x
    exec            4.80x -> 4.42x  10.63x -> 9.49x
    floor: exec's libraries  2.43-2.50x  5.09-5.49x  (new: EXEC_LIBRARIES, nothing of ours)
    floor: msgspec           1.92-1.99x  4.08-4.34x  (new: msgspec alone)

Where exec's time went (-X importtime; gc.callbacks; a profiler on both threads; compile
and eval callers counted): 44 cycle collections (~4 ms) walking the ~30,000 objects the
imports leave alive; 17 modules imported and never called (the warm runtime with socket,
signal and selectors, made by the auto runtime only to answer capabilities(); the four
tool executors; secrets with random for temporary names; the SQLite catalog, opened and
closed unqueried: ~2 ms); 165 compile() calls, 114 of them v1.model's TypedDict
annotations turned into ForwardRefs. Cut: a command read without typer raises the young
generation's threshold to 50,000 for its run (cli.fast: 44 -> 1 collection); the warm
runtime, the executors and the catalog load on first use; os.urandom names temporary
files; v1.model's annotations are evaluated (compile calls 195 -> 82). Modules imported:
295 -> 275 (in process: 308 -> 288, ours 160 -> 150); importtime self sum
67.8 -> 54.4 ms (medians of 3 at load ~5).

What is left is mostly not ours: exec's libraries alone are 2.4-2.5x editable and
5.1-5.5x installed (msgspec alone 1.9-2.0x and 4.1-4.3x: its C module imports typing_
extensions with inspect, uuid with platform, and decimal when it loads; nothing of ours
triggers that), so ``exec`` <= 5x installed is below the floor of the libraries it needs.
Measured and not taken: the ~10 regular expressions compiled at import that a turn never
uses (~0.5 ms together, 0.03x), and the remaining ForwardRef compiles (~50, ~0.25 ms).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENGINE = "agentsessions.sessions.local, agentsessions.journal.stores.file.store"
LIST_MODULES = (
    "agentsessions.cli.fast, agentsessions.cli.reading, agentsessions.cli.sessionview, "
    "agentsessions.sessions.listing, agentsessions.journal.stores.file.lister, "
    "agentsessions.sessions.config, agentsessions.journal.crypto.configured"
)
"""What a local ``list`` imports (tests/e2e/startup_modules.json pins the whole set): the
command line read without typer, and the file store's listing opened alone
(sessions.listing), not the engine."""
RUN_LIBRARIES = "sqlite3, json, hashlib, pathlib, typing, re, datetime"
"""The stdlib modules whose code ``list``'s run calls (a profile of the run, imports
excluded: the catalog's sqlite3, session.json decoded by json (journal.format.strictjson)
and its sums hashed, paths, the times it prints; its value classes need no dataclasses:
agentsessions.valueclass)."""
EXEC_LIBRARIES = (
    "typing, hashlib, base64, datetime, json, threading, weakref, contextvars, queue, fcntl, "
    "msgspec, zlib, bisect, hmac, select, sqlite3, resource, atexit, signal"
)
"""The stdlib and third-party modules that a one-turn ``exec``'s own modules import (those
``python -c pass`` has already excluded), found with ``-X importtime``: what its run
needs before any module of ours; msgspec alone is ~0.55x of them."""
FLOORS = {
    "floor: typer": "typer.main",
    "floor: list's modules": LIST_MODULES,
    "floor: exec's engine": f"{ENGINE}, agentsessions.controller.controller, harnesses.echo",
    "floor: list's libraries": RUN_LIBRARIES,
    "floor: exec's libraries": EXEC_LIBRARIES,
    "floor: msgspec": "msgspec",
    "floor: dataclasses": "dataclasses",
}
"""Bare imports, no command: what a command parsed by typer pays (typer; list, get and a
plain exec are parsed without it: cli.fast), the modules ``list`` imports and the library
modules a one-turn ``exec`` imports (the engine on the file store; the controller and the
echo harness besides), the libraries list's run calls into, before any module of ours,
and ``dataclasses`` alone (inspect, ast, dis, tokenize), which the value classes on these
paths were built with until agentsessions.valueclass (kept as the measure of what that
took off). A target below its floor is out of reach for the CLI alone."""


def cpu_seconds(argv: list[str], env: dict[str, str]) -> float:
    """User+sys CPU seconds of one run of ``argv`` (its output discarded); it must exit 0."""
    proc = subprocess.Popen(
        argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read() if proc.stderr else b""
    if proc.returncode != 0:
        raise SystemExit(f"{argv} exited {proc.returncode}: {err.decode(errors='replace')}")
    return usage.ru_utime + usage.ru_stime


def make_home(env: dict[str, str], count: int) -> tuple[Path, str]:
    """A temporary home holding ``count`` sessions, and the uid of one that ran a turn."""
    home = Path(tempfile.mkdtemp(prefix="agentsessions-startup-"))
    sys.path.insert(0, str(ROOT))
    import agentsessions

    with agentsessions.open(home) as engine:
        uids = [engine.create(name=f"s{i}").uid for i in range(count)]
    cli = [sys.executable, "-m", "agentsessions", "--home", str(home)]
    subprocess.run(
        [*cli, "exec", uids[0], "--input", "hello"], env=env, check=True, capture_output=True
    )
    return home, uids[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument(
        "--installed",
        action="store_true",
        help="run the agentsessions script beside this python (a non-editable install, its "
        "bytecode as pip compiled it) instead of this checkout",
    )
    args = parser.parse_args()
    pycache = tempfile.mkdtemp(prefix="agentsessions-startup-pyc-")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AGENTSESSIONS_") and k not in ("PYTHONDONTWRITEBYTECODE", "COLUMNS")
    }
    # the installed console script itself, not a shim in front of it (pyenv's is bash)
    script = Path(sys.executable).with_name("agentsessions")
    if args.installed and not script.is_file():
        raise SystemExit(f"--installed: no {script}: pip install the package into that venv")
    if not args.installed:
        env["PYTHONPATH"] = str(ROOT)
        env["PYTHONPYCACHEPREFIX"] = pycache  # bytecode, as an installed package has (docstring)
    home, uid = make_home(env, args.sessions)
    cli = [sys.executable, "-m", "agentsessions", "--home", str(home)]
    if args.installed:
        cli = [str(script), "--home", str(home)]
    commands: dict[str, list[str]] = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "--help": [*cli, "--help"],
        "list": [*cli, "list"],
        "list --json": [*cli, "list", "--json"],
        "get UID": [*cli, "get", uid],
        "exec UID --input x": [*cli, "exec", uid, "--input", "x"],
    }
    if script.is_file() and not args.installed:  # pip's script imports cli.app:main directly
        commands["script --help"] = [sys.executable, str(script), "--help"]
    # floors: what a command pays before its own work, whatever the CLI does (docstring)
    for name, modules in FLOORS.items():
        commands[name] = [sys.executable, "-c", f"import {modules}"]
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    ratio: dict[str, list[float]] = {name: [] for name in commands}
    for argv in commands.values():  # warm-up: page cache, .pyc files
        cpu_seconds(argv, env)
    for _ in range(args.rounds):
        base = 0.0
        for name, argv in commands.items():
            seconds = cpu_seconds(argv, env)
            base = seconds if name == "python -c pass" else base
            cpu[name].append(seconds)
            ratio[name].append(seconds / base)
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(pycache, ignore_errors=True)
    print(f"{args.rounds} rounds, {args.sessions} sessions; medians of user+sys CPU")
    print(f"{'command':<22} {'cpu s':>8} {'x python -c pass':>17}")
    for name in commands:
        median_cpu = statistics.median(cpu[name])
        print(f"{name:<22} {median_cpu:>8.3f} {statistics.median(ratio[name]):>17.2f}")


if __name__ == "__main__":
    main()
