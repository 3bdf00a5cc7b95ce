"""Adapters that put agentsessions under other agent frameworks' storage seams (issue 19).

Each adapter is a thin layer over the :class:`~agentsessions.sessions.Sessions` API and
lives in its own module, importing its framework only there: importing this package (or
``agentsessions``) imports no framework; importing an adapter without its framework is an
ImportError naming the extra that installs it. A front end on the top line of the layer
map (:mod:`agentsessions`).
"""

from __future__ import annotations

EXTRAS = {
    "agentsessions.integrations.openai_agents": ("openai-agents", "the OpenAI Agents SDK"),
    "agentsessions.integrations.langgraph": ("langgraph", "LangGraph"),
    "agentsessions.integrations.adk": ("adk", "Google ADK"),
}
"""Each adapter module: the extra that installs its framework, and the framework's name."""


def missing_framework(module: str, exc: ImportError) -> ImportError:
    """The one-line refusal of importing adapter ``module`` without its framework: it names
    the extra that installs it (the bare ModuleNotFoundError named a dependency of the
    framework, such as ``langchain_core``)."""
    extra, framework = EXTRAS[module]
    return ImportError(
        f"{module} needs {framework}, which is not installed ({exc}): "
        f"pip install 'agentsessions[{extra}]'"
    )
