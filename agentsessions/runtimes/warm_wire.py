"""The warm runtime's wire: length-prefixed JSON frames over a unix socket, and the codecs.

A frame is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON (one
object). Frames above :data:`MAX_FRAME` are refused on both ends, so a confused or
hostile peer cannot make the other side allocate without bound. Every read takes a
timeout; end of stream is :class:`PeerGone`, never an empty frame.

The codecs turn the controller's dataclasses (``Start`` without its history but with its
tools, ``ModelRequest``, ``Completion``, ``HarnessDescriptor``) into JSON objects and back;
bytes travel as base64 and tuples come back as tuples, so a decoded value compares equal
to the encoded one. A hosted harness thus gets the same ``Start.tools`` as an in-process
one, and its ``sink.tool`` calls come back to the caller, whose sink mediates them (TOOL_CALL
durable before the executor runs, approval gates) exactly as for a harness in-process.
"""

from __future__ import annotations

import base64
import json
import socket
import struct
from typing import Any

from agentsessions.controller.spi import (
    Capabilities,
    Completion,
    HarnessDescriptor,
    History,
    ModelRequest,
    Start,
    ToolSpec,
)
from agentsessions.journal.stores.store import WorkingState

PROTOCOL = 1
MAX_FRAME = 64 * 1024 * 1024
_HEADER = struct.Struct(">I")

Frame = dict[str, Any]


class PeerGone(ConnectionError):
    """The other end closed the connection (or died) before a whole frame arrived."""


class ProtocolError(ConnectionError):
    """The peer sent something that is not a frame of this protocol."""


def send(sock: socket.socket, frame: Frame) -> None:
    """Write one frame (the caller's socket timeout bounds the write)."""
    data = json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(data) > MAX_FRAME:
        raise ProtocolError(f"frame of {len(data)} bytes exceeds the {MAX_FRAME}-byte limit")
    sock.sendall(_HEADER.pack(len(data)) + data)


def recv(sock: socket.socket, timeout: float) -> Frame:
    """Read one frame, waiting at most ``timeout`` seconds for each chunk.

    Raises :class:`PeerGone` at end of stream, :class:`ProtocolError` on a bad frame and
    ``TimeoutError`` when the peer stays silent.
    """
    sock.settimeout(timeout)
    (size,) = _HEADER.unpack(_exactly(sock, _HEADER.size))
    if size > MAX_FRAME:
        raise ProtocolError(f"peer announced a {size}-byte frame (limit {MAX_FRAME})")
    try:
        frame = json.loads(_exactly(sock, size).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(f"peer sent a frame that is not JSON: {exc}") from None
    if not isinstance(frame, dict):
        raise ProtocolError("peer sent a frame that is not a JSON object")
    return frame


def _exactly(sock: socket.socket, size: int) -> bytes:
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        chunk = sock.recv(min(remaining, 1 << 20))
        if not chunk:
            raise PeerGone("peer closed the connection")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def connect(path: str, timeout: float) -> socket.socket:
    """A connected unix stream socket to ``path`` (OSError if nobody listens there)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(path)
    except BaseException:
        sock.close()
        raise
    return sock


def request(path: str, frame: Frame, timeout: float) -> Frame:
    """One request, one reply, on a fresh connection."""
    with connect(path, timeout) as sock:
        send(sock, frame)
        return recv(sock, timeout)


# --------------------------------------------------------------------------- codecs


def _state_to_wire(state: WorkingState) -> Frame:
    return {**state.to_json(), "data": base64.b64encode(state.data).decode("ascii")}


def _state_from_wire(frame: Frame | None) -> WorkingState:
    """The working state :func:`_state_to_wire` encoded (version 0 from an older caller)."""
    if not frame:
        return WorkingState()
    return WorkingState(
        int(frame["version"]), base64.b64decode(frame["data"]), int(frame["covers_from"]),
        int(frame["covers_to"]), str(frame["author"]), int(frame["time_ns"]),
    )  # fmt: skip


def start_to_wire(start: Start) -> Frame:
    """A ``Start`` without its history (the history is served on demand)."""
    return {
        "execution_id": start.execution_id,
        "config": base64.b64encode(start.config).decode("ascii"),
        "inputs": list(start.inputs),
        "state": _state_to_wire(start.state),
        "resume_from_seq": start.resume_from_seq,
        "memory_restored": start.memory_restored,
        "tools": [tool_to_wire(t) for t in start.tools],
    }


def start_from_wire(frame: Frame, history: History) -> Start:
    """The ``Start`` that :func:`start_to_wire` encoded, bound to ``history``."""
    return Start(
        execution_id=str(frame["execution_id"]),
        config=base64.b64decode(frame["config"]),
        inputs=tuple(frame["inputs"]),
        history=history,
        state=_state_from_wire(frame.get("state")),
        resume_from_seq=int(frame["resume_from_seq"]),
        memory_restored=bool(frame["memory_restored"]),
        tools=tuple(ToolSpec(**tool) for tool in frame.get("tools", ())),
    )


def tool_to_wire(tool: ToolSpec) -> Frame:
    """A ``ToolSpec`` as a JSON object (``ToolSpec(**frame)`` reads it back)."""
    return {
        "name": tool.name,
        "description": tool.description,
        "mediation": tool.mediation,
        "input_schema": dict(tool.input_schema),
    }


def request_to_wire(request: ModelRequest) -> Frame:
    """A ``ModelRequest`` as a JSON object."""
    return {
        "model": request.model,
        "messages": list(request.messages),
        "params": None if request.params is None else dict(request.params),
        "tools": list(request.tools),
        "tool_choice": request.tool_choice,
    }


def request_from_wire(frame: Frame) -> ModelRequest:
    """The ``ModelRequest`` that :func:`request_to_wire` encoded."""
    return ModelRequest(
        model=str(frame["model"]),
        messages=tuple(frame["messages"]),
        params=frame["params"],
        tools=tuple(frame["tools"]),
        tool_choice=frame["tool_choice"],
    )


def completion_to_wire(completion: Completion) -> Frame:
    """A ``Completion`` as a JSON object."""
    return {"message": completion.message, "usage": completion.usage}


def completion_from_wire(frame: Frame) -> Completion:
    """The ``Completion`` that :func:`completion_to_wire` encoded."""
    return Completion(message=frame["message"], usage=frame["usage"])


def descriptor_to_wire(descriptor: HarnessDescriptor) -> Frame:
    """A ``HarnessDescriptor`` as a JSON object."""
    caps = descriptor.capabilities
    return {
        "id": descriptor.id,
        "version": descriptor.version,
        "models": list(descriptor.models),
        "tools": [tool_to_wire(t) for t in descriptor.tools],
        "capabilities": {
            "resumability": caps.resumability,
            "fork_safe": caps.fork_safe,
            "requires_gpu": caps.requires_gpu,
            "streaming": caps.streaming,
            "reasoning_replay": caps.reasoning_replay,
            "working_state": caps.working_state,
            "uses_session_model": caps.uses_session_model,
        },
    }


def descriptor_from_wire(frame: Frame) -> HarnessDescriptor:
    """The ``HarnessDescriptor`` that :func:`descriptor_to_wire` encoded."""
    return HarnessDescriptor(
        id=str(frame["id"]),
        version=str(frame["version"]),
        models=tuple(frame["models"]),
        tools=tuple(ToolSpec(**tool) for tool in frame["tools"]),
        capabilities=Capabilities(**frame["capabilities"]),
    )
