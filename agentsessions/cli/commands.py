"""The commands of the command line by name: the module that registers each, and the line
``--help`` shows for it.

A run imports the module of the command it runs and no other (:mod:`.lazygroup` defers the
rest by name), so adding a command costs the others nothing at start-up; ``--help`` draws
the commands panel from this table. Light on purpose: importing it imports nothing.

Invariants (tests/unit/test_cli_lazy.py): the table names every command and group the
modules register, in the order ``--help`` lists them (commands, then groups), and each
summary is the first paragraph of the help typer gives the command it builds.
"""

from __future__ import annotations

COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("create", "create", "Create an empty session and print its uid."),
    ("list", "list", "List one page of a project's sessions, newest first."),
    (
        "get",
        "get",
        "Show a session's metadata and its projections (last seq, compute and exec state).",
    ),
    ("log", "log", "Show a session's records as a table (seq, kind, execution, hash, summary)."),
    (
        "verify",
        "verify",
        'Walk hash chains from prev_hash "" and check seqs, links and content hashes.',
    ),
    (
        "export",
        "export",
        "Write a session to one portable, self-verifying file (metadata plus records).",
    ),
    (
        "import",
        "import_",
        "Recreate a session from a file with identical seqs and hashes; print the new uid.",
    ),
    ("demo", "demo", "Run the main job end to end, offline, and narrate each step."),
    (
        "approve",
        "approve",
        "Approve a parked tool call, then resume: the tool runs once and the turn goes on.",
    ),
    (
        "deny",
        "approve",
        "Deny a parked tool call, then resume: the tool never runs, the model reads the denial.",
    ),
    ("cancel", "cancel", "End a session's open execution: LIFECYCLE CANCEL, then END CANCELED."),
    (
        "compact",
        "compact",
        "Summarise a chat session's turns before the last --keep-turns into one entry.",
    ),
    (
        "follow",
        "follow",
        "Print a session's records from --from on, then each new one as it commits.",
    ),
    ("reindex", "reindex", "Rebuild the index that list reads, from the session directories."),
    (
        "resolve",
        "resolve",
        "Record what an unresolved tool call really did, then resume: the turn goes on.",
    ),
    (
        "serve",
        "serve",
        "Serve the sessions under --home over gRPC (agentsessions.v1.Sessions) until stopped.",
    ),
    (
        "delete",
        "shred",
        "Soft-delete a session: hidden from list and read-only (never written again).",
    ),
    (
        "shred",
        "shred",
        "Destroy an encrypted session's data key: its content becomes unreadable for good.",
    ),
    (
        "store",
        "store",
        "Show the entries of a tool's own store in a session (seq, author, time, data).",
    ),
    ("exec", "exec", "Run one turn: record the inputs, drive the harness, stream the answer."),
    (
        "replay",
        "replay",
        "Stream a session's stored records, or with --rerun prove that they replay.",
    ),
    (
        "resume",
        "resume",
        "Bring a session back: restore suspended compute and finish an open turn.",
    ),
    (
        "suspend",
        "suspend",
        "Snapshot and free a session's compute (cold); the journal records the snapshot.",
    ),
    (
        "fork",
        "fork",
        "Branch a session: each child shares the parent's chain up to SEQ, all or nothing.",
    ),
    (
        "view",
        "view",
        "Write a session as one self-contained HTML page: metadata, verify badge, timeline.",
    ),
    (
        "compute",
        "compute",
        "List and stop the warm host processes that keep harness memory (e.g. counter's). Each "
        "exits by itself after its idle timeout (AGENTSESSIONS_WARM_IDLE_SECONDS, default 3600 s, "
        "counted from its last use).",
    ),
    (
        "harness",
        "harness",
        "Serve a harness as its own process (Harness.Connect), and register harnesses served at an"
        " address so that sessions can run on them.",
    ),
    (
        "keys",
        "keys",
        "Make a master key file, or rotate the master key of the encrypted sessions in the store "
        "(--home, or --store; their data keys are rewrapped; no journal byte moves).",
    ),
    (
        "token",
        "token",
        "Create, list and revoke the bearer tokens `agentsessions serve` accepts. A token acts in "
        "its projects only; the home keeps its hash, never its text.",
    ),
    (
        "produce",
        "produce",
        "Turn an external conversation into sessions: a GitHub issue's comments become turns of "
        "one session, and the agent's answers are sent back.",
    ),
)
"""(name, module under ``agentsessions.cli``, summary) of every command and group."""


def modules() -> list[str]:
    """The command modules, each once, in the order of the table."""
    return list(dict.fromkeys(module for _, module, _ in COMMANDS))


def load(module: str) -> None:
    """Import the command module ``module`` (it registers its commands on the root app)."""
    from importlib import import_module

    import_module(f"agentsessions.cli.{module}")
