"""The ``agentsessions`` command line: a thin veneer over the library.

``app`` parses and dispatches the journal commands, ``turns`` adds the controller's (exec,
replay, resume, fork, suspend) and ``stream`` shows a running turn; ``render`` draws tables,
progress and JSON, ``home`` resolves where sessions live, ``wiring`` assembles a controller,
``demo`` narrates the main job. Nothing here is imported by the library.
"""
