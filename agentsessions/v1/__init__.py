"""The ``agentsessions.v1`` vocabulary: typed messages and their constructors, the event
schema and the proto3-JSON rules.

What harnesses, models and front ends speak. Imports nothing of agentsessions but
``agentsessions.errors`` (the layer map's second line, :mod:`agentsessions`); the journal
stores this vocabulary, it does not define it.
:mod:`.model` types the messages and :mod:`.construct` builds them; :mod:`.results` holds
the values the ``Sessions`` API returns that the layers below build (so they build them
once), :mod:`.limits` the bounds the API puts on a request.
"""
