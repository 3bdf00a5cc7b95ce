"""``agentsessions demo``: the main job end to end, narrated step by step.

In a fresh temporary home (or the one given): create a session, import the shipped Go
reference journal, list, show the imported log, verify both sessions, export the imported one
and verify the export file. Each step prints one line; the run ends with a one-line summary.
Any failing step raises its :class:`~agentsessions.errors.AgentSessionsError`, so the CLI
exits with that error's code. The library does the work; this module only sequences and
narrates it.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.resources
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from agentsessions.errors import (
    AgentSessionsError,
    ChainBrokenError,
    NotFoundError,
    UnavailableError,
)

FIXTURE = "go-v0.1.2-completed.json"
DEMO_PROJECT = "demo"
T = TypeVar("T")


@dataclass
class Narrator:
    """Prints one line per step (unless quiet) and keeps a JSON record of what happened."""

    quiet: bool
    steps: list[dict[str, Any]] = field(default_factory=list)
    pending: list[Any] = field(default_factory=list)

    def step(self, title: str, action: Callable[[], tuple[T, str]]) -> T:
        """Run ``action`` (returning a value and a detail line) and narrate the outcome."""
        from rich.padding import Padding
        from rich.text import Text

        from agentsessions.cli.render import stdout_console

        self.pending.clear()
        try:
            value, detail = action()
        except AgentSessionsError as exc:
            self.steps.append({"step": title, "ok": False, "error": exc.to_dict()})
            if not self.quiet:
                line = Text.assemble(("✗ ", "bold red"))
                line.append(f"{title}: {exc.message}")
                stdout_console().print(line, soft_wrap=True)
            raise
        self.steps.append({"step": title, "ok": True, "detail": detail})
        if not self.quiet:
            line = Text.assemble(("✓ ", "green"))
            line.append(f"{title}: ", style="bold")
            line.append(detail)
            console = stdout_console()
            console.print(line, soft_wrap=True)
            for renderable in self.pending:
                console.print(Padding(renderable, (0, 0, 0, 2)))
        self.pending.clear()
        return value

    def show(self, renderable: Any) -> None:
        """Print a table or other rich renderable under the current step's line."""
        if not self.quiet:
            self.pending.append(renderable)


@contextlib.contextmanager
def demo_home(home: Path | None) -> Iterator[tuple[Path, bool]]:
    """The home to run in and whether it is temporary (then removed afterwards)."""
    if home is not None:
        yield home, False
        return
    with tempfile.TemporaryDirectory(prefix="agentsessions-demo-") as tmp:
        yield Path(tmp), True


@contextlib.contextmanager
def fixture_path() -> Iterator[Path]:
    """The shipped Go fixture as a real file (extracted when running from a zipapp)."""
    resource = importlib.resources.files("agentsessions").joinpath("data", FIXTURE)
    with importlib.resources.as_file(resource) as path:
        yield path


def run_demo(home: Path | None, *, as_json: bool = False) -> dict[str, Any]:
    """Run the demo; print the narration (or one JSON object) and return the summary."""
    from agentsessions.cli.home import resolve_home

    started = time.monotonic()
    narrator = Narrator(quiet=as_json)
    explicit = resolve_home(home) if home is not None else None
    with demo_home(explicit) as (where, temporary):
        summary = _run_steps(narrator, where)
    summary.update(
        home=str(where),
        temporary_home=temporary,
        seconds=round(time.monotonic() - started, 3),
        steps=narrator.steps,
    )
    _finish(narrator, summary)
    return summary


def _finish(narrator: Narrator, summary: dict[str, Any]) -> None:
    from rich.text import Text

    from agentsessions.cli import render

    if narrator.quiet:
        render.write_json(summary)
        return
    where = "a temporary home (removed)" if summary["temporary_home"] else summary["home"]
    line = Text.assemble(("demo ok: ", "bold green"))
    line.append(
        f"imported {summary['records']} Go reference records, verified 2 sessions and the "
        f"export ({summary['export_bytes']} bytes) in {where}"
    )
    render.stdout_console().print(line, soft_wrap=True)


def _run_steps(narrator: Narrator, home: Path) -> dict[str, Any]:
    from agentsessions.journal.filestore import FileStore

    store = FileStore(home)
    try:
        created = narrator.step("create a session", lambda: _create(store))
        imported = narrator.step("import the Go reference journal", lambda: _import(store))
        narrator.step("list project demo", lambda: _list(store, narrator, {created, imported}))
        narrator.step("show the imported log", lambda: _log(store, narrator, imported))
        for uid in (created, imported):
            narrator.step(f"verify {uid}", functools.partial(_verify, store, uid))
        export = home / "exports" / f"{imported}.agx"
        size = narrator.step(
            "export the imported session", lambda: _export(store, imported, export)
        )
        records = narrator.step("verify the export file", lambda: _verify_file(export))
    finally:
        store.close()
    return {
        "ok": True,
        "created_uid": created,
        "imported_uid": imported,
        "records": records,
        "export": str(export),
        "export_bytes": size,
    }


def _create(store: Any) -> tuple[str, str]:
    from agentsessions.journal.store import SessionMeta, new_uid

    meta = SessionMeta(
        uid=new_uid(),
        project=DEMO_PROJECT,
        name="demo-session",
        harness="echo",
        model="echo",
        labels={"source": "demo"},
        create_time_ns=time.time_ns(),
    )
    info = store.create(meta)
    return info.uid, f"{info.uid} in project {DEMO_PROJECT!r} (no events yet)"


def _import(store: Any) -> tuple[str, str]:
    from agentsessions.journal.exchange import import_file

    with fixture_path() as path:
        info = import_file(store, path, project=DEMO_PROJECT, name="go-v0.1.2-completed")
    detail = f"{info.uid}: {info.last_seq} records, head {info.last_hash[:16]}"
    return info.uid, detail


def _list(store: Any, narrator: Narrator, expected: set[str]) -> tuple[None, str]:
    from agentsessions.cli.render import sessions_table, stdout_console

    page = store.list(DEMO_PROJECT)
    listed = {info.uid for info in page.sessions}
    if not expected <= listed:
        missing = ", ".join(sorted(expected - listed))
        raise NotFoundError(f"list does not show {missing}")
    narrator.show(sessions_table(page.sessions, stdout_console().width))
    return None, f"{len(page.sessions)} sessions, newest first"


def _log(store: Any, narrator: Narrator, uid: str) -> tuple[None, str]:
    from agentsessions.cli.render import log_table

    records = list(store.read(uid))
    narrator.show(log_table(records))
    kinds = " -> ".join(str(r.event.get("kind", "")).removeprefix("EVENT_") for r in records)
    return None, kinds or "no records"


def _check(report: Any) -> tuple[int, str]:
    if not report.ok:
        raise ChainBrokenError(
            f"{report.source} does not verify at seq {report.first_bad_seq}: {report.reason}"
        )
    if not report.records:
        return 0, "empty journal (nothing to chain yet)"
    return report.records, f"{report.records} records, chain intact up to seq {report.last_seq}"


def _verify(store: Any, uid: str) -> tuple[int, str]:
    from agentsessions.journal.verify import verify_session

    return _check(verify_session(store, uid, strict=True))


def _export(store: Any, uid: str, out: Path) -> tuple[int, str]:
    from agentsessions.journal.exchange import export_session

    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        summary = export_session(store, uid, out, compress=True)
        how = "zstd"
    except UnavailableError:
        summary = export_session(store, uid, out, compress=False)
        how = "uncompressed: no zstd codec here"
    size = int(summary.get("bytes", out.stat().st_size))
    return size, f"{summary['records']} records -> {out} ({size} bytes, {how})"


def _verify_file(path: Path) -> tuple[int, str]:
    from agentsessions.journal.verify import verify_path

    return _check(verify_path(path, strict=True))
