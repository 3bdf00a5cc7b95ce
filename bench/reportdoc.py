"""The report's page: ``docs/benchmarks/README.md``, its tables and its PNG charts.

Everything here reads the results dict :mod:`report` wrote to ``bench/results.json`` (so the
page can be re-drawn from a results file without measuring again: ``python3
bench/reportdoc.py bench/results.json``). Charts are matplotlib's, drawn off-screen (Agg).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

OURS = "#1f6feb"  # our sides in every chart; peers grey, the baseline dark
PEER = "#9aa4ad"
BASE = "#3d444d"


def _color(name: str, baseline: str) -> str:
    if name == baseline:
        return BASE
    return OURS if name.startswith(("agentsessions", "ours")) else PEER


def _fig(height: float = 3.6) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, height), dpi=110)
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax


def _save(fig: Any, out: Path, name: str) -> str:
    fig.tight_layout()
    fig.savefig(out / name)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return name


def _bars(out: Path, name: str, title: str, values: dict[str, float], baseline: str,
          unit: str, *, log: bool = False) -> str:  # fmt: skip
    fig, ax = _fig(0.45 * len(values) + 1.2)
    names = list(values)
    ax.barh(names, [values[n] for n in names], color=[_color(n, baseline) for n in names])
    ax.invert_yaxis()
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(unit)
    ax.set_title(title, loc="left", fontsize=11)
    for i, n in enumerate(names):
        ax.annotate(f" {values[n]:,.3g}", (values[n], i), va="center", fontsize=8)
    return _save(fig, out, name)


def growth_chart(sides: dict[str, Any], baseline: str, out: Path, name: str) -> str:
    """Turns/s against the turn index: a flat line is a turn whose cost does not grow."""
    fig, ax = _fig(4.2)
    for side, s in sides.items():
        if len(s["curve"]) < 3 or "CLI" in side:  # a process a turn: a rate, not a curve
            continue
        xs, ys = zip(*s["curve"], strict=True)
        ax.plot(xs, ys, label=side, color=_color(side, baseline),
                linewidth=2.2 if side.startswith(("agentsessions", "ours")) else 1.2)  # fmt: skip
        ax.annotate(side, (xs[-1], ys[-1]), fontsize=7, xytext=(3, 0), textcoords="offset points")
    ax.set_yscale("log")
    ax.set_xlabel("turn")
    ax.set_ylabel("turns/s (log)")
    ax.set_title("Turns/s as the conversation grows", loc="left", fontsize=11)
    return _save(fig, out, name)


def _conversation(stage: dict[str, Any], out: Path, lines: list[str]) -> None:
    sides, baseline = stage["sides"], stage["baseline"]
    base = sides[baseline]["turns_per_s"]
    lines += [
        "## The conversation",
        "",
        f"One chat of 600-byte messages, each turn durable before it returns; ratios against "
        f"{baseline} in the same run.",
        "",
        f"![turns/s as the conversation grows]({growth_chart(sides, baseline, out, 'growth.png')})",
        "",
        "| store | turns | turns/s | x baseline | last-100 / first-100 | bytes on disk | load ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, s in sides.items():
        rounds = ", ".join(f"{r:,.0f}" for r in s["turns_per_s_rounds"])
        size = f"{s['bytes']:,}" if s["bytes"] is not None else "-"
        load = f"{s['load_ms']:,.1f}" if s["load_ms"] is not None else "-"
        lines.append(
            f"| {name} | {s['turns']:,} | {s['turns_per_s']:,.0f} ({rounds}) | "
            f"{s['turns_per_s'] / base:.3f}x | {s['flat']:.2f} | {size} | {load} |"
        )
    sized = {n: float(s["bytes"]) for n, s in sides.items() if s["bytes"]}
    loads = {n: float(s["load_ms"]) for n, s in sides.items() if s["load_ms"]}
    size_chart = _bars(out, "bytes.png", "Bytes on disk", sized, baseline, "bytes", log=True)
    load_chart = _bars(
        out, "load.png", "Loading the conversation back", loads, baseline, "ms", log=True
    )
    lines += ["", f"![bytes on disk]({size_chart})", "", f"![load time]({load_chart})", ""]


def _adapters(stage: dict[str, Any], out: Path, lines: list[str]) -> None:
    lines += ["## The framework adapters", "",
              "Each framework's own SQL store, driven as the framework drives it, beside our "
              "adapter of it on the same conversation.", ""]  # fmt: skip
    for framework, pair in stage.items():
        sides, baseline = pair["sides"], pair["baseline"]
        base = sides[baseline]["turns_per_s"]
        versions = ", ".join(f"{d} {v}" for d, v in pair["versions"].items())
        lines += [f"### {framework} ({versions})", "",
                  "| store | turns/s | x theirs | last-100 / first-100 | bytes | load ms |",
                  "|---|---:|---:|---:|---:|---:|"]  # fmt: skip
        for name, s in sides.items():
            size = f"{s['bytes']:,}" if s["bytes"] is not None else "-"
            load = f"{s['load_ms']:,.1f}" if s["load_ms"] is not None else "-"
            lines.append(f"| {name} | {s['turns_per_s']:,.0f} | {s['turns_per_s'] / base:.2f}x | "
                         f"{s['flat']:.2f} | {size} | {load} |")  # fmt: skip
        chart = growth_chart(sides, baseline, out, f"growth-{framework}.png")
        lines += ["", f"![{framework}: turns/s as the conversation grows]({chart})", ""]


def _startup(stage: dict[str, Any], out: Path, lines: list[str]) -> None:
    ratios = {n: s["x_python"] for n, s in stage.items()}
    lines += ["## Cold start", "",
              "User + system CPU of a whole process, bytecode cached as pip leaves it.", "",
              "| command | CPU s | x python3 -c pass |", "|---|---:|---:|"]  # fmt: skip
    lines += [f"| `{n}` | {s['cpu_s']:.3f} | {s['x_python']:.2f}x |" for n, s in stage.items()]
    chart = _bars(out, "startup.png", "Cold start, x python3 -c pass", ratios,
                  "python3 -c pass", "x python3 -c pass")  # fmt: skip
    lines += ["", f"![cold start]({chart})", ""]


def _journal(stage: dict[str, Any], out: Path, lines: list[str]) -> None:
    lines += ["## The journal against the raw floor", ""]
    lines += ["| figure | ours | baseline | baseline's | ratio |", "|---|---:|---|---:|---:|"]
    for r in stage["rows"]:
        lines.append(f"| {r['figure']} | {r['ours']:,.0f} | {r['baseline']} | {r['base']:,.0f} | "
                     f"{r['ratio']:.2f}x |")  # fmt: skip
    values = {f"{r['figure']} / {r['baseline']}": r["ratio"] for r in stage["rows"]}
    chart = _bars(out, "journal.png", "Ours as a fraction of the floor", values, "", "x baseline")
    lines += ["", f"![journal against the floor]({chart})", ""]


JETSTREAM_SIDES = [
    "Our store's sides: `jetstream R1` and `R3` (a durable server, a three-node cluster), "
    "`R1 via nats-py` (commits through nats-py instead of our lean publisher), `R1 streams` "
    "(a stream per session), `R1 8 shards` (the deployment over 8 streams), `R1 one store` "
    "(every session on one connection, as a daemon holds them) and `one store 8 sh` (both). "
    "The floors, no store code: `bare R1` (nats-py publishes of the same bytes, each awaiting "
    "its ack) and `raw R1` (a synchronous client on a raw socket, a thread per session: what "
    "any Python client could reach); `streams`: a stream per session. "
    "`bench/jetstream_rates.py` says more.",
]


def _jetstream(stage: dict[str, Any], out: Path, lines: list[str]) -> None:
    if "skipped" in stage:
        lines += ["## JetStream", "", f"Skipped: {stage['skipped']}.", ""]
        return
    rows = [r for r in stage["rates"] if r["side"] != "file loop"]
    lines += ["## JetStream against the file store", "", *JETSTREAM_SIDES, "",
              "| side | events/commit | sessions | commits/s | x file store |",
              "|---|---:|---:|---:|---:|"]  # fmt: skip
    for r in rows:
        lines.append(f"| {r['side']} | {r['events_per_commit']} | {r['sessions']} | "
                     f"{r['commits_per_s']:,.0f} | {r['vs_file_store']:.2f}x |")  # fmt: skip
    values = {f"{r['side']}, {r['events_per_commit']} ev, {r['sessions']} sess": r["vs_file_store"]
              for r in rows if r["side"] != "file store"}  # fmt: skip
    chart = _bars(out, "jetstream.png", "JetStream commits, x the file store", values, "",
                  "x file store")  # fmt: skip
    lines += ["", f"![jetstream against the file store]({chart})", ""]


SECTIONS = {
    "conversation": _conversation,
    "adapters": _adapters,
    "startup": _startup,
    "journal": _journal,
    "jetstream": _jetstream,
}


def write(results: dict[str, Any], out: Path) -> None:
    """Draw the charts into ``out`` and write ``out/README.md``."""
    out.mkdir(parents=True, exist_ok=True)
    m = results["machine"]
    lines = [
        "# Benchmarks",
        "",
        f"Measured {results['date']} by `{results['command']}` ({results['turns']:,} turns, "
        f"{results['rounds']} interleaved round(s); the slowest peers one round). Every figure, "
        "with its rounds, is in `bench/results.json`.",
        "",
        f"Machine: {m['cpu_model'] or 'unknown CPU'}, {m['cpus']} cores, Python {m['python']}, "
        f"{m['platform']}, temp files on {m['tmp_filesystem'] or 'unknown'}; load average "
        f"{', '.join(f'{x:.2f}' for x in m['load_average_at_start'])} at the start. **The "
        "machine is shared**: absolute figures move from run to run, so read the ratios, each "
        "against a baseline measured in the same run, and the spread over rounds shown in "
        "parentheses.",
        "",
        "Repeat: `python3 bench/report.py` (the peers install into a venv of the report's own).",
        "",
    ]
    for name, section in SECTIONS.items():
        if name in results["stages"]:
            section(results["stages"][name], out, lines)
    (out / "README.md").write_text("\n".join(lines).rstrip() + "\n")


if __name__ == "__main__":
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("bench/results.json")
    target = Path(sys.argv[2]) if len(sys.argv) > 2 else Path("docs/benchmarks")
    write(json.loads(source.read_text()), target)
