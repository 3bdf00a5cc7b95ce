"""The ``agentsessions`` command line: a thin veneer over the library.

``app`` parses and dispatches the journal commands, ``turns`` adds the controller's (exec,
replay, resume, fork, suspend) and ``stream`` shows a running turn; ``render`` draws tables,
progress and JSON, ``home`` resolves where sessions live, ``wiring`` assembles a controller,
``demo`` narrates the main job, ``helpview`` draws ``--help`` on rich's core. Nothing here
is imported by the library.
"""

# The root command lives in ``app``; the controller's commands (exec, replay, resume, suspend,
# fork) and the ``compute`` group register themselves on it when imported. They import
# ``app``, so the package (not ``app``) imports them: no module imports its importer.
from agentsessions.cli import app as _app
from agentsessions.cli import approve as _approve  # noqa: F401
from agentsessions.cli import cancel as _cancel  # noqa: F401
from agentsessions.cli import compact as _compact  # noqa: F401
from agentsessions.cli import compute as _compute  # noqa: F401
from agentsessions.cli import follow as _follow  # noqa: F401
from agentsessions.cli import harness as _harness  # noqa: F401
from agentsessions.cli import keys as _keys  # noqa: F401
from agentsessions.cli import reindex as _reindex  # noqa: F401
from agentsessions.cli import resolve as _resolve  # noqa: F401
from agentsessions.cli import serve as _serve  # noqa: F401
from agentsessions.cli import shred as _shred  # noqa: F401
from agentsessions.cli import store as _store  # noqa: F401
from agentsessions.cli import token as _token  # noqa: F401
from agentsessions.cli import turns as _turns  # noqa: F401
from agentsessions.cli import view as _view  # noqa: F401
from agentsessions.cli.helpview import reflow_help

reflow_help(_app.app)
