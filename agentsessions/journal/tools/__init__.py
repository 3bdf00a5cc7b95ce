"""Tools over stored sessions: verify, export and import (the interchange format).

The top room of the journal: built on the format and the stores, imported by nothing below.
"""
