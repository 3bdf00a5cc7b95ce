"""The ``agentsessions`` command line: a thin veneer over the library.

``app`` parses and dispatches, ``render`` draws tables, progress and JSON, ``home`` resolves
where sessions live, ``demo`` narrates the main job. Nothing here is imported by the library.
"""
