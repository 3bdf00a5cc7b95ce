"""Adapters that put agentsessions under other agent frameworks' storage seams (issue 19).

Each adapter is a thin layer over the :class:`~agentsessions.sessions.Sessions` API and
lives in its own module, importing its framework only there: importing this package (or
``agentsessions``) imports no framework.
"""
