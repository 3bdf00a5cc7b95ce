"""The ``agentsessions`` command line: a thin veneer over :mod:`agentsessions.sessions`.

One module per command (or command group), each registering itself on the root command of
:mod:`.app`; the root's global options and the engine a command opens live in
:mod:`.context`, the options several commands share in :mod:`.options`. What is drawn:
:mod:`.render` (JSON, consoles, progress, error lines), :mod:`.sessionview` (``list`` and
``get``), :mod:`.recordview` (records and events on one line), :mod:`.turnview` and
:mod:`.stream` (a running turn), :mod:`.helpview` (``--help`` on rich's core). Only the
subcommand that runs is built (:mod:`.lazygroup`). A front end on the top line of the
layer map (:mod:`agentsessions`): no module here imports the journal or the controller
(tests/unit/test_import_graph.py); nothing in the library imports the CLI.
"""

from agentsessions.cli import app
from agentsessions.cli.helpview import reflow_help

# Each command module registers its command (or group) on ``app.app`` when imported, so the
# order of these imports is the order ``--help`` lists them: isort must leave it alone. A
# command module imports ``app``, so the package, not ``app``, imports them.
# isort: off
from agentsessions.cli import create, list, get, log, verify, export, import_, demo, approve
from agentsessions.cli import cancel, compact, follow, reindex, resolve, serve, shred, store
from agentsessions.cli import exec, replay, resume, suspend, fork, view
from agentsessions.cli import compute, harness, keys, token, produce  # groups: after commands
# isort: on

COMMAND_MODULES = (
    *(create, list, get, log, verify, export, import_, demo, approve, cancel, compact),
    *(follow, reindex, resolve, serve, shred, store, exec, replay, resume, suspend, fork),
    view,
    *(compute, harness, keys, token, produce),
)
"""The modules that register a command or group, in the order ``--help`` lists them."""

reflow_help(app.app)
