"""Producers: adapters that turn an external conversation (an issue, a chat thread) into
turns of one session each, and send the agent's answers back (issue 22).

A front end on the top line of the layer map (:mod:`agentsessions`): a producer stands on
the :class:`~agentsessions.sessions.api.Sessions` API and the ``v1`` vocabulary only, never
on the journal or the controller (tests/unit/test_import_graph.py), and nothing in the core
knows a producer exists: whatever is producer-specific rides in the session's origin and
annotations and in the inputs' own parts.

Every producer has the same shape, so the next one is a small module:

- a *thread* (:class:`.mapping.Thread`) is the external conversation, and it is the
  session's origin: ``source`` names the platform, ``subject`` the conversation within it,
  ``uri`` where a person opens it. One thread is one session, found or made by its origin
  (atomically: two deliveries racing on a new thread make one session);
- a *delivery* (:class:`.mapping.Delivery`) is one thing that happened in a thread: a new
  message (a turn's INPUT, its author the input's actor), or an edit or a deletion of an
  earlier one (an INPUT of its own that says so: history is never rewritten). Its platform
  id is the turn's commit id, so a redelivered event lands once;
- the platform module parses and authenticates the platform's events into deliveries
  (:mod:`.github`: the ``issues`` and ``issue_comment`` webhooks, HMAC-signed), and says
  which authors are the bot itself (never answered: no loop);
- :mod:`.lanes` runs the turns, one thread's in order and different threads' in parallel,
  and acknowledges a delivery once its INPUT is durable; :mod:`.sinks` deliver the answer
  (print, append to a file, POST to a URL); :mod:`.receiver` is the HTTP endpoint.

The same shape for a chat platform (Slack, Matrix, Discord): ``source="slack"``,
``subject="<team>/<channel>/<thread_ts>"`` (a thread is a subject; a message outside any
thread starts one, keyed by its own ts), ``uri`` the thread's permalink; each message is a
delivery whose id is the platform's event id, its author the message's user; an edited or
deleted message is an edit or deletion delivery; the bot filter is the app's own user id;
the reply sink posts to the thread (``chat.postMessage`` with ``thread_ts``). Only the
parsing and the signature check are new (Slack signs ``v0:<timestamp>:<body>`` with
HMAC-SHA256 in ``X-Slack-Signature``): a ``slack.py`` beside :mod:`.github`.
"""

from __future__ import annotations
