"""Live model calls as the controller makes them: counted (the evidence for I1, zero model
calls on replay) and told to the installed telemetry (a span per call, its token counts)."""

from __future__ import annotations

from collections.abc import Callable

import agentsessions.telemetry as telemetry
from agentsessions.valueclass import value

from .spi import Completion, ModelProvider, ModelRequest


class CountingModels:
    """Model providers by name, counting every live call (the evidence for I1)."""

    def __init__(
        self,
        factory: Callable[[str], ModelProvider],
        guard: Callable[[str], None] | None = None,
    ) -> None:
        self._factory = factory
        self._guard = guard  # runs on every lookup, cached or not (an engine's caller check)
        self._cache: dict[str, ModelProvider] = {}
        self.calls = 0

    def __call__(self, name: str) -> ModelProvider:
        if self._guard is not None:
            self._guard(name)
        if name not in self._cache:
            self._cache[name] = _Counted(self, self._factory(name))
        return self._cache[name]


@value
class _Counted:
    owner: CountingModels
    inner: ModelProvider

    def complete(
        self, request: ModelRequest, on_delta: Callable[[str], None] | None = None
    ) -> Completion:
        self.owner.calls += 1
        with telemetry.current().model_call(request.model) as span:
            completion = self.inner.complete(request, on_delta=on_delta)
            for key, value in (completion.usage or {}).items():
                span.set(key, value)  # input_tokens, output_tokens (the otel side picks)
            return completion
