"""Root of the test tree.

Its presence puts ``tests/`` on ``sys.path`` (pytest's default ``prepend`` import mode
inserts each conftest's directory), so the shared helper modules that live here, such as
:mod:`fake_openai`, import by name from every test directory without a package.
"""
