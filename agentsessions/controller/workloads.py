"""The tools an execution runs with: by the workload its EXECUTION_START names.

The controller asks a :class:`~agentsessions.controller.spi.Workloads` for a new turn's
workload digest (recorded in its first commit, :mod:`agentsessions.v1.workloadref`), and
for the tools and executors of the digest a recorded execution names when it resumes,
continues after an approval or replays. :class:`StaticWorkloads` adapts the older pair of
callables (a fixed tool table, tests and embedding code) to that Protocol: its executions
record no digest and always get the same tools.
"""

from __future__ import annotations

from .spi import BoundTool, ToolOffer, ToolResolver, ToolSpec, Workloads


class StaticWorkloads:
    """:class:`Workloads` over a fixed resolver and offer (either may be None), in front of
    ``base`` (an engine's workloads) for what they leave out: a caller that sets a
    controller's ``tools`` keeps the recorded offers and digests, with its own executors."""

    def __init__(
        self,
        tools: ToolResolver | None,
        offers: ToolOffer | None,
        base: Workloads | None = None,
    ) -> None:
        self.tools = tools
        self.offers_now = offers
        self.base = base

    def current(self, uid: str) -> str:
        """The base's digest; none without a base (a fixed table is the same every run)."""
        return self.base.current(uid) if self.base is not None else ""

    def offers(self, uid: str, digest: str) -> tuple[ToolSpec, ...]:
        """The fixed offer's tools, else the base's (none without either)."""
        if self.offers_now is not None:
            return self.offers_now(uid)
        return self.base.offers(uid, digest) if self.base is not None else ()

    def bind(self, uid: str, digest: str, name: str) -> BoundTool:
        """The fixed resolver's tool, else the base's; UnknownToolError without either."""
        from agentsessions.errors import UnknownToolError

        if self.tools is not None:
            return self.tools(uid, name)
        if self.base is not None:
            return self.base.bind(uid, digest, name)
        raise UnknownToolError(
            f"session {uid} has no tools; tool {name!r} cannot run",
            hint="give the session a workload (its tools)",
            param="tools",
        )

    def check_harness(self, uid: str, harness: str) -> None:
        """The base's check; a fixed table lets any harness work."""
        if self.base is not None:
            self.base.check_harness(uid, harness)

    def close(self) -> None:
        """Close what the resolver and the base hold (their ``close``, if any)."""
        for part in (self.tools, self.base):
            close = getattr(part, "close", None)
            if callable(close):
                close()


def resolver_for(workloads: Workloads, digest: str) -> ToolResolver:
    """The :data:`ToolResolver` of one execution: its workload's tools by name."""

    def resolve(uid: str, name: str) -> BoundTool:
        return workloads.bind(uid, digest, name)

    return resolve
