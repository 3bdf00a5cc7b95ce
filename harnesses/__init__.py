"""Reference harnesses shipped with agentsessions: ``echo``, ``counter``, ``chat``, ``memory``.

Each module exposes ``create() -> Harness`` (see :mod:`agentsessions.controller.spi`) and
imports only the controller SPI, the journal's message constructors and the error tree; the
core never imports this package. The controller finds a harness by name through
:class:`agentsessions.controller.registry.Registry`: first an explicit registration, then the
``agentsessions.harnesses`` entry-point group (``pyproject.toml`` declares ``echo``,
``counter``, ``chat`` and ``memory``), then the ``harnesses.<name>`` module convention,
which is how the single-file app, which carries no entry-point metadata, finds them.

- ``echo`` (STATELESS_REPLAY): one model call per turn with the last input, exactly the
  request the Go reference's echo harness makes, so Go-written echo journals replay here and
  pass the I0 model-input check.
- ``counter`` (REQUIRES_MEMORY_SNAPSHOT): counts inputs in process memory and never reads
  history (I4), so the count survives a turn only on a runtime that keeps memory.
- ``chat`` (STATELESS_REPLAY): a history-aware chat loop: a system prompt, the recent
  INPUT/OUTPUT conversation from history, then the new inputs, in one model call.
- ``memory`` (REQUIRES_MEMORY_SNAPSHOT, working state): remembers facts in memory and in its
  working state (``sink.state``), never reading history, so a fresh instance continues from
  the session's state when its warm host is gone.

A harness never writes its own journal records: everything goes through its ``Sink``.
"""
