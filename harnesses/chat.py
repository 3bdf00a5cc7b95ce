"""The chat harness: a history-aware chat loop that runs the session's tools.

Invariants: every request is built only from the config, ``Start.history``, ``Start.inputs``,
``Start.tools`` and the completions and tool results of this run (which replay and resume
serve from the journal), so replaying the journal rebuilds the same requests (STATELESS_REPLAY,
I0); the harness writes nothing itself (the sink records MODEL_CALL, each completion's OUTPUT,
TOOL_CALL and TOOL_RESULT) and keeps no state between runs. Each model call whose completion
carries usage (token counts the provider read) is followed by ``sink.usage``: one EVENT_USAGE
per model call, which replay serves back with the completion and checks.

The first request's messages are, in order: the system prompt (role ``system``, left out when
empty), the conversation among the last ``history_events`` events of the history (INPUT as
``user``, OUTPUT as ``assistant`` with any ``tool_call`` parts, and each run of TOOL_RESULTs
as one ``tool`` message; other kinds are skipped), then the new inputs. Model ``""`` means
"the session's model": the controller fills it in.

The tool loop (digest 5.8): the mediated and approval tools of ``Start.tools`` are offered on
``ModelRequest.tools``. While a completion asks for tool calls, the harness copies each
``tool_call`` part, sets on the copy the tier the workload gives the tool and the idempotency
key ``<execution id>:<step>:<index>:<call id>`` (unique in the session: model call ids such
as a script's ``call-0-0`` repeat across turns), and hands it to ``sink.tool``; a call to a
tool that was not offered (unknown, or ``reported``: this harness runs no tool itself) gets an
``is_error`` result it reports with ``sink.report``. The completion and then one ``tool``
message holding every result (``tool_result`` parts, in call order) are appended, and the
model is called again. The turn ends when a completion asks for no tool; a completion that
still asks for tools at the ``max_steps``-th model call fails the turn (HarnessError, exit 14)
before any of those calls runs.

Compaction (issue 9 item 5, :mod:`agentsessions.v1.compaction`): an execution whose
config holds ``"compact": {"keep_turns": N}`` makes one model call and no tool call: the
request is a summarising system prompt, the previous summary (if any, as an assistant
message), the conversation of the entries it newly covers (up to just before the last N
turns) and a user message asking for the summary. The completion is recorded as the model's
OUTPUT; the harness then outputs the marker (role assistant, a ``compaction`` DataPart with
``from_seq``, ``to_seq`` and ``tokens_saved``: bytes/4 of the messages the summary replaces
minus the summary's). A compaction reads the whole history once. In a later turn, when the
history window holds a marker, the request is the system prompt, the summary (an assistant
message, never instructions), the conversation of the window's entries after ``to_seq``
(compaction executions left out) and the new inputs: bounded by the window, whatever the
session's length. A session without compactions gets exactly the requests it always got. A
marker that left the window is not looked for (that would mean reading the whole history);
compact again to bring a summary back into it.

A turn compacts itself when ``compact_over_bytes`` is set (default 0: never) and its first
request's messages are over that many bytes (compact JSON): before its own model call, in
the same execution, it summarises the history window up to its last ``compact_keep_turns``
turns (default 2) with the same request a compaction sends, records the summary and the
marker, and sends the request rebuilt on the summary. A window with nothing to compact sends
the request as it was. The summary call is streamed like any other model call.

A turn also compacts when a request overflows: when the model refuses one as over its
context window (ContextOverflowError, from the provider's HTTP 400
``context_length_exceeded`` or a scripted ``{"overflow": true}``), the harness makes that
same compaction and sends the request again, rebuilt on the summary (the turn's tool
exchanges so far kept after it), within the same step. A turn compacts at most once, either
way: a second compaction would summarise the same history window again, so a request that
overflows after it, or an overflow with nothing to compact, fails the turn with
ContextOverflowError (exit 14). The refused call stays on the record (its MODEL_CALL and a
refusal ERROR, :mod:`agentsessions.v1.refusals`), and replay serves that refusal, so it
takes the same path with no model call.

Config (``Start.config``) is UTF-8 JSON, for example
``{"system_prompt": "...", "model": "", "history_events": 50, "max_steps": 8}``: empty config
or a missing key takes the default and unknown keys are ignored; text that is not a JSON
object, or a value of the wrong type, raises HarnessError naming the problem.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

import agentsessions.v1.compaction as compaction
from agentsessions.controller.spi import (
    STATELESS_REPLAY,
    Capabilities,
    Completion,
    Event,
    HarnessDescriptor,
    Message,
    ModelRequest,
    Sink,
    Start,
    ToolSpec,
)
from agentsessions.errors import ContextOverflowError, HarnessError
from agentsessions.v1.construct import text_message, tool_result_event

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."
DEFAULT_HISTORY_EVENTS = 50
DEFAULT_MAX_STEPS = 8
COMPACT_PROMPT = (
    "You summarise conversations. Write a concise summary of the conversation you are given: "
    "the facts, decisions, open questions and tool results a later turn needs. Answer with the "
    "summary only."
)
COMPACT_REQUEST = "Summarise the conversation above."
# the version stays "1": a session without tools gets exactly the requests it always got
DESCRIPTOR = HarnessDescriptor(
    id="chat",
    version="1",
    capabilities=Capabilities(resumability=STATELESS_REPLAY, uses_session_model=True),
)
OFFERED = ("MEDIATION_CONTROLLER_MEDIATED", "MEDIATION_REQUIRES_APPROVAL")
"""The tiers whose tools the chat harness offers: the host runs them (it runs none itself)."""
_ROLES = {"EVENT_INPUT": "user", "EVENT_OUTPUT": "assistant"}
_CONFIG_HINT = (
    'config is JSON like {"system_prompt": "...", "model": "", "history_events": 50, '
    '"max_steps": 8}'
)


@dataclass(frozen=True)
class ChatConfig:
    """The chat harness's per-execution settings (from ``Start.config``)."""

    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    model: str = ""
    history_events: int = DEFAULT_HISTORY_EVENTS
    max_steps: int = DEFAULT_MAX_STEPS  # model calls per turn, tool rounds included
    compact_keep_turns: int | None = None  # set: this execution is a compaction
    compact_over_bytes: int = 0  # a request over this compacts first (0: never)
    compact_keep: int = 2  # the turns such a compaction keeps

    @classmethod
    def parse(cls, config: bytes) -> ChatConfig:
        """Settings from config bytes; empty means defaults. Raises HarnessError if invalid."""
        if not config.strip():
            return _DEFAULT_CONFIG  # frozen: every empty config shares it
        try:
            doc: Any = json.loads(config.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            msg = f"chat: config is not valid JSON: {exc}"
            raise HarnessError(msg, hint=_CONFIG_HINT) from None
        if doc is None:
            return cls()
        if not isinstance(doc, dict):
            raise HarnessError(
                f"chat: config must be a JSON object, got {type(doc).__name__}", hint=_CONFIG_HINT
            )
        prompt = doc.get("system_prompt", DEFAULT_SYSTEM_PROMPT)
        model = doc.get("model", "")
        events = doc.get("history_events", DEFAULT_HISTORY_EVENTS)
        steps = doc.get("max_steps", DEFAULT_MAX_STEPS)
        for key, value in (("system_prompt", prompt), ("model", model)):
            if not isinstance(value, str):
                raise HarnessError(f"chat: config {key} must be a string", hint=_CONFIG_HINT)
        if type(events) is not int or events < 0:
            raise HarnessError(
                f"chat: config history_events must be an integer >= 0, got {events!r}",
                hint=_CONFIG_HINT,
            )
        if type(steps) is not int or steps < 1:
            raise HarnessError(
                f"chat: config max_steps must be an integer >= 1, got {steps!r}",
                hint=_CONFIG_HINT,
            )
        keep = _compact_keep(doc.get("compact"))
        over, auto_keep = doc.get("compact_over_bytes", 0), doc.get("compact_keep_turns", 2)
        for key, value in (("compact_over_bytes", over), ("compact_keep_turns", auto_keep)):
            if type(value) is not int or value < 0:
                raise HarnessError(
                    f"chat: config {key} must be an integer >= 0, got {value!r}",
                    hint=_CONFIG_HINT,
                )
        return cls(
            system_prompt=prompt,
            model=model,
            history_events=events,
            max_steps=steps,
            compact_keep_turns=keep,
            compact_over_bytes=over,
            compact_keep=auto_keep,
        )


_DEFAULT_CONFIG = ChatConfig()


def _compact_keep(value: Any) -> int | None:
    """``keep_turns`` of a ``compact`` config value (absent: not a compaction)."""
    if value is None:
        return None
    keep = value.get("keep_turns", 2) if isinstance(value, dict) else value
    if type(keep) is not int or keep < 0:
        raise HarnessError(
            f'chat: config compact must be {{"keep_turns": N}} with N >= 0, got {value!r}',
            hint=_CONFIG_HINT,
        )
    return keep


class ChatHarness:
    """System prompt + recent conversation + new inputs to the model; then the tool loop."""

    def describe(self) -> HarnessDescriptor:
        """The chat harness's descriptor (id "chat", version "1", STATELESS_REPLAY)."""
        return DESCRIPTOR

    def run(self, start: Start, sink: Sink) -> None:
        """Call the model, run the tools it asks for, and call it again until it answers
        without tool calls (see the module docstring)."""
        cfg = ChatConfig.parse(start.config)
        if cfg.compact_keep_turns is not None:
            compact(cfg, cfg.compact_keep_turns, start, sink)
            return
        offered = {t.name: t for t in start.tools if t.mediation in OFFERED}
        definitions = tuple(offered[name].definition() for name in sorted(offered))
        base = list(build_messages(cfg, start))
        compacted = False  # a turn compacts at most once (module docstring)
        if cfg.compact_over_bytes and compaction.size(base) > cfg.compact_over_bytes:
            rebuilt = self_compacted(cfg, start, sink)
            base, compacted = list(rebuilt or base), rebuilt is not None
        messages: list[Message] = []  # this turn's completions and tool results so far
        for step in range(cfg.max_steps):
            request = ModelRequest(cfg.model, (*base, *messages), None, tools=definitions)
            try:
                completion = call_model(sink, request)
            except ContextOverflowError as exc:  # over the model's context: compact, retry
                if compacted:
                    raise still_over(exc) from None
                base, compacted = list(compacted_for(cfg, start, sink, exc)), True
                try:
                    completion = call_model(sink, replace(request, messages=(*base, *messages)))
                except ContextOverflowError as again:
                    raise still_over(again) from None
            calls = tool_calls(completion)
            if not calls:
                return
            if step + 1 == cfg.max_steps:
                raise HarnessError(
                    f"chat: the model still asks for tools ({', '.join(c['tool'] for c in calls)}) "
                    f"after {cfg.max_steps} model calls (max_steps); those calls did not run",
                    hint="allow more with --config '{\"max_steps\": N}'",
                )
            results = [
                run_call(sink, offered, call, f"{start.execution_id}:{step}:{index}")
                for index, call in enumerate(calls)
            ]
            messages.append(completion.message)
            messages.append(tool_message(results))


def call_model(sink: Sink, request: ModelRequest) -> Completion:
    """One model call, and its usage recorded when the provider reported any."""
    completion = sink.model(request)
    if completion.usage:
        sink.usage(dict(completion.usage))
    return completion


def compacted_for(
    cfg: ChatConfig, start: Start, sink: Sink, exc: ContextOverflowError
) -> tuple[Message, ...]:
    """The turn's first messages rebuilt on a compaction made because a request overflowed
    (:func:`self_compacted`); ContextOverflowError when the window has nothing to compact."""
    rebuilt = self_compacted(cfg, start, sink)
    if rebuilt is None:
        raise ContextOverflowError(
            "chat: the request is over the model's context window and the history has "
            f"nothing to compact (no turn before the last {cfg.compact_keep}): {exc}",
            hint="keep fewer turns with --config '{\"compact_keep_turns\": 0}', or send less",
        ) from None
    return rebuilt


def still_over(exc: ContextOverflowError) -> ContextOverflowError:
    """The turn's failure when a request overflows again after the turn compacted."""
    return ContextOverflowError(
        f"chat: the request is still over the model's context window after compacting: {exc}",
        hint="send less in one turn, or lower history_events with --config",
    )


def tool_calls(completion: Completion) -> list[dict[str, Any]]:
    """The ``tool_call`` parts of a completion, in order."""
    parts = completion.message.get("parts") or []
    return [dict(p["tool_call"]) for p in parts if isinstance(p.get("tool_call"), dict)]


def run_call(
    sink: Sink, offered: dict[str, ToolSpec], call: dict[str, Any], position: str
) -> dict[str, Any]:
    """The result of one call the model asked for: through the host (a copy carrying the
    workload's tier and a session-unique key), or an error the harness reports for a tool
    that was not offered."""
    call_id, name = str(call.get("id") or ""), str(call.get("tool") or "")
    spec = offered.get(name)
    if spec is None:
        known = ", ".join(sorted(offered)) or "none"
        why = f"tool {name!r} is not offered (offered: {known})"
        result = dict(tool_result_event(call_id, is_error=True, error=why)["result"])
        sink.report(result)
        return result
    copy = {**call, "mediation": spec.mediation, "idempotency_key": f"{position}:{call_id}"}
    return dict(sink.tool(copy))


def tool_message(results: list[dict[str, Any]]) -> Message:
    """The ``tool`` message that gives the model its results (one part per result)."""
    return {"role": "tool", "parts": [{"tool_result": r} for r in results]}


def compact(cfg: ChatConfig, keep_turns: int, start: Start, sink: Sink) -> None:
    """Summarise the whole history up to the cut and record the marker (module docstring)."""
    events = list(enumerate(start.history, 1))
    plan = compaction.plan(events, keep_turns)
    if plan is None:
        raise HarnessError(
            f"chat: nothing to compact: no turn before the last {keep_turns} since the last "
            "compaction",
            hint="compact after more turns, or keep fewer with --keep-turns N",
        )
    summarise(cfg, events, plan, sink)


def self_compacted(cfg: ChatConfig, start: Start, sink: Sink) -> tuple[Message, ...] | None:
    """A turn whose request is over ``compact_over_bytes``: summarise the window up to the
    last ``compact_keep_turns`` turns first (same execution) and return the request rebuilt
    on that summary; None (and nothing recorded) when the window has nothing to compact."""
    events = window(cfg, start)
    plan = compaction.plan(events, cfg.compact_keep) if events else None
    if plan is None:
        return None
    return build_messages(cfg, start, summarise(cfg, events, plan, sink), events)


def summarise(
    cfg: ChatConfig, events: list[tuple[int, Event]], plan: compaction.Plan, sink: Sink
) -> compaction.Marker:
    """One model call for the summary of what ``plan`` covers (the previous summary, then
    the conversation after it up to the cut), then the marker output; the new marker."""
    drop, _latest = compaction.markers(events)
    after = plan.previous.to_seq if plan.previous is not None else 0
    covered: list[Message] = []
    if plan.previous is not None and plan.previous.summary is not None:
        covered.append(summary_message(plan.previous.summary))
    inside = [e for s, e in events if after < s <= plan.to_seq and s not in drop]
    covered.extend(conversation(inside))
    ask = (text_message("system", COMPACT_PROMPT), text_message("user", COMPACT_REQUEST))
    request = ModelRequest(cfg.model, (dict(ask[0]), *covered, dict(ask[1])), None)
    summary = summary_message(call_model(sink, request).message)
    saved = max(0, compaction.estimate_tokens(covered) - compaction.estimate_tokens([summary]))
    sink.output(compaction.marker_message(plan.from_seq, plan.to_seq, saved))
    return compaction.Marker("", plan.from_seq, plan.to_seq, saved, summary)


def summary_message(message: Message) -> Message:
    """A summary as the model's words: role assistant, its text parts only."""
    parts = [p for p in message.get("parts") or [] if "text" in p]
    return {"role": "assistant", "parts": parts}


def window(
    cfg: ChatConfig, start: Start, tail: list[Event] | None = None
) -> list[tuple[int, Event]]:
    """The last ``history_events`` events of the history (``tail`` when read already), with
    their seqs."""
    if not cfg.history_events:
        return []
    events = start.history.tail(cfg.history_events) if tail is None else tail
    return list(enumerate(events, len(start.history) - len(events) + 1))


def plain_conversation(events: list[Event]) -> list[Message] | None:
    """:func:`conversation` of a history window in one pass, when the window is plain: no
    compaction in it (no EXECUTION_START with a config, no OUTPUT but of text parts: so
    :func:`compaction.markers` finds nothing) and no TOOL_RESULT (so nothing is paired);
    None for any other window, which takes the general path.

    Every turn of a chat builds its request from the window again, and nearly every
    window is plain: one loop instead of the markers scan, the drop filter and the
    conversation loop, with the same messages (a test holds the two paths together)."""
    out: list[Message] = []
    for event in events:
        kind = event.get("kind", "")
        if kind == "EVENT_INPUT" or kind == "EVENT_OUTPUT":
            msg = event.get("message")
            if msg is None:
                continue
            role = _ROLES[kind]
            if role == "assistant" and compaction.may_mark(msg):
                return None  # a DataPart (a marker?), a tool call: the general path decides
            out.append(msg if msg.get("role") == role else {**msg, "role": role})
        elif kind == "EVENT_EXECUTION_START":
            if (event.get("execution_start") or {}).get("config") and (
                compaction.is_compaction_start(event)
            ):
                return None  # a compaction's: its outputs leave the conversation
        elif kind == "EVENT_TOOL_RESULT":
            return None
    return out


def build_messages(
    cfg: ChatConfig,
    start: Start,
    latest: compaction.Marker | None = None,
    events: list[tuple[int, Event]] | None = None,
) -> tuple[Message, ...]:
    """The first request's messages: system prompt, conversation from the history window
    (after its latest compaction, or ``latest``: the summary, then what follows its range),
    new inputs."""
    messages: list[Message] = []
    if cfg.system_prompt:
        messages.append(dict(text_message("system", cfg.system_prompt)))
    if events is None and latest is None:  # the turn's own window: plain, nearly always
        tail = start.history.tail(cfg.history_events) if cfg.history_events else []
        plain = plain_conversation(tail)
        if plain is not None:
            return (*messages, *plain, *start.inputs)
        events = window(cfg, start, tail)
    events = window(cfg, start) if events is None else events
    drop, found = compaction.markers(events)
    latest = latest or found
    if latest is not None:
        if latest.summary is not None:
            messages.append(summary_message(latest.summary))
        events = [(s, e) for s, e in events if s > latest.to_seq]
    messages.extend(conversation([e for s, e in events if s not in drop]))
    messages.extend(start.inputs)
    return tuple(messages)


def conversation(events: list[Event]) -> list[Message]:
    """INPUT messages as user turns, OUTPUT messages as assistant turns and each run of
    TOOL_RESULTs as one tool turn, in order, paired (see :func:`paired`)."""
    out: list[Message] = []
    tools = False  # a tool call or result seen: only then can pairing change anything
    for event in events:
        kind = event.get("kind", "")
        role = _ROLES.get(kind)
        if role is None:  # not INPUT or OUTPUT: a tool result, or no conversation at all
            if kind == "EVENT_TOOL_RESULT" and isinstance(event.get("result"), dict):
                tools = True
                part = {"tool_result": event["result"]}
                if out and out[-1].get("role") == "tool":
                    out[-1] = {**out[-1], "parts": [*out[-1]["parts"], part]}
                else:
                    out.append({"role": "tool", "parts": [part]})
            continue
        msg = event.get("message")
        if msg is None:
            continue
        if role == "assistant" and not tools:
            for part in msg.get("parts") or ():
                tools = tools or "tool_call" in part
        out.append(msg if msg.get("role") == role else {**msg, "role": role})
    return paired(out) if tools else out


def paired(messages: list[Message]) -> list[Message]:
    """Only tool calls answered by the next message and results of the previous message's
    calls: a history window that cuts an exchange, or a turn that failed between a call and
    its result, never sends a model a call without its result or a result without its call.
    A message left with no parts by this is dropped."""
    out: list[Message] = []
    kept_prev = False
    for i, msg in enumerate(messages):
        prev = messages[i - 1] if i and kept_prev else None
        nxt = messages[i + 1] if i + 1 < len(messages) else None
        found: Message | None = msg
        if msg.get("role") == "tool":
            asked = _ids(prev, "tool_call") if prev and prev.get("role") == "assistant" else set()
            found = _keep(msg, "tool_result", asked)
        elif msg.get("role") == "assistant":
            answered = _ids(nxt, "tool_result") if nxt and nxt.get("role") == "tool" else set()
            found = _keep(msg, "tool_call", answered)
        kept_prev = found is not None
        if found is not None:
            out.append(found)
    return out


def _ids(msg: Message, kind: str) -> set[str]:
    return {str(p[kind].get("id", "")) for p in msg.get("parts") or [] if kind in p}


def _keep(msg: Message, kind: str, ids: set[str]) -> Message | None:
    """``msg`` without its ``kind`` parts whose ids are not in ``ids``; None when that left
    nothing (a message that had no parts to begin with stays as it was)."""
    parts = msg.get("parts") or []
    kept = [p for p in parts if kind not in p or str(p[kind].get("id", "")) in ids]
    if len(kept) == len(parts):
        return msg
    return {**msg, "parts": kept} if kept else None


def create() -> ChatHarness:
    """A new chat harness (the registry's factory)."""
    return ChatHarness()
