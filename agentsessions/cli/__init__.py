"""The ``agentsessions`` command line: a thin veneer over :mod:`agentsessions.sessions`.

One module per command (or command group), each registering itself on the root command of
:mod:`.app` when imported; :mod:`.commands` names the module of every command, so that a
run imports only the one it runs (``agentsessions.cli.app.app`` is the root with all of
them). The root's global options and the engine a command opens live in :mod:`.context`,
the options several commands share in :mod:`.options`. What is drawn: :mod:`.render`
(JSON, consoles, progress, error lines), :mod:`.sessionview` (``list`` and ``get``),
:mod:`.recordview` (records and events on one line), :mod:`.turnview` and :mod:`.stream` (a
running turn), :mod:`.helpview` (``--help`` on rich's core). Only the subcommand that runs
is built (:mod:`.lazygroup`). A front end on the top line of the layer map
(:mod:`agentsessions`): no module here imports the journal or the controller
(tests/unit/test_import_graph.py); nothing in the library imports the CLI. Importing this
package imports nothing else.
"""
