"""The scope's rule for a workload that crossed the wire (``agentsessions.server.toolpolicy``):
the operator's is loaded as sent; a token holder's becomes the effective workload, in the
service's own file; any other path, or a server offering no tools, is PERMISSION_DENIED."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsessions.errors import PermissionDeniedError, WorkloadError
from agentsessions.server.toolpolicy import WireWorkload, caller_tools, workload_file
from agentsessions.sessions.tokens import Principal
from agentsessions.tools.offered import parse_offered
from agentsessions.tools.workload import load_workload

TOKEN = Principal(name="t", projects=frozenset({"a"}), token_id="0123456789ab", primary="a")
OPERATOR = Principal(name="", projects=None)
OFFERED = parse_offered(
    '[tools.log]\nmediation = "mediated"\nexecutor = "append_line"\n'
    'config = { path = "/srv/log.txt" }\n'
)
SENT = '[tools.log]\nmediation = "approval"\n'


def test_a_token_holders_workload_becomes_the_effective_one_in_the_services_file() -> None:
    with workload_file(SENT) as sent:
        assert isinstance(sent, WireWorkload)
        got = caller_tools(TOKEN, OFFERED, sent)
        assert got is sent
        tool = load_workload(sent).tools["log"]  # what the engine will load and record
        assert tool.executor == "append_line" and tool.config == {"path": "/srv/log.txt"}
        assert tool.mediation == "MEDIATION_REQUIRES_APPROVAL"
    assert not Path(sent.path).exists()  # the service's file is gone after the call


def test_the_operators_workload_is_loaded_as_sent() -> None:
    full = SENT + 'executor = "append_line"\nconfig = { path = "/tmp/mine.txt" }\n'
    with workload_file(full) as sent:
        assert caller_tools(OPERATOR, OFFERED, sent) is sent
        assert sent is not None and Path(sent.path).read_text() == full
        assert caller_tools(OPERATOR, None, sent) is sent
    with workload_file(SENT) as sent, pytest.raises(WorkloadError) as info:
        caller_tools(OPERATOR, OFFERED, sent)  # no executor: not a workload on its own
    assert info.value.message.startswith("workload from the caller: [tools.log] executor")


def test_a_path_or_no_offer_is_refused_for_a_token(tmp_path: Path) -> None:
    path = tmp_path / "w.toml"
    path.write_text(SENT)
    with pytest.raises(PermissionDeniedError, match="server's disk"):
        caller_tools(TOKEN, OFFERED, path)
    with workload_file(SENT) as sent, pytest.raises(PermissionDeniedError, match="offers no"):
        caller_tools(TOKEN, None, sent)
    assert caller_tools(TOKEN, None, None) is None
    with workload_file("") as nothing:
        assert nothing is None
