"""The operator's offered tools and a caller's workload merged with them
(``agentsessions.tools.offered``): what a caller may select and set, what it may never
define, and the effective text the engine records (read back to the same tools)."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentsessions.errors import PermissionDeniedError, WorkloadError
from agentsessions.tools.offered import OfferedTools, parse_offered
from agentsessions.tools.tomltext import dumps
from agentsessions.tools.workload import parse_workload

OPERATOR = """
[tools.log]
mediation = "mediated"
executor = "append_line"
config = { path = "/srv/log.txt" }
caller_config = ["path"]

[tools.notes]
mediation = "approval"
executor = "notes"

[tools.lookup]
mediation = "reported"
description = "the harness looks it up"

[session]
components = ["chat", "echo"]
tool_components = ["notes"]
"""


@pytest.fixture
def offered() -> OfferedTools:
    return parse_offered(OPERATOR, "offered.toml")


def _tools(text: str) -> dict[str, Any]:
    return dict(parse_workload(text).tools)


def test_a_selection_gets_the_operators_executor_and_config(offered: OfferedTools) -> None:
    text = offered.effective('[tools.log]\ndescription = "note it"\nmediation = "approval"\n')
    tools = _tools(text)
    assert set(tools) == {"log"}
    log = tools["log"]
    assert (log.executor, dict(log.config)) == ("append_line", {"path": "/srv/log.txt"})
    assert log.description == "note it" and log.mediation == "MEDIATION_REQUIRES_APPROVAL"
    assert parse_workload(text).components == ("chat", "echo")  # the operator's, kept


def test_an_allowed_config_key_is_the_callers(offered: OfferedTools) -> None:
    text = offered.effective('[tools.log]\nconfig = { path = "/srv/other.txt" }\n')
    assert dict(_tools(text)["log"].config) == {"path": "/srv/other.txt"}


def test_session_defaults_narrow_to_the_selection(offered: OfferedTools) -> None:
    assert parse_workload(offered.effective("[tools.log]\n")).tool_components == ()
    picked = parse_workload(offered.effective("[tools.notes]\n[tools.log]\n"))
    assert picked.tool_components == ("notes",)
    mine = parse_workload(offered.effective('[tools.log]\n[session]\ncomponents = ["chat"]\n'))
    assert mine.components == ("chat",)


def test_a_callers_own_reported_tool_is_kept(offered: OfferedTools) -> None:
    text = offered.effective('[tools.mine]\nmediation = "reported"\ndescription = "d"\n')
    assert _tools(text)["mine"].executor == ""


@pytest.mark.parametrize(
    "text, word",
    [
        ('[tools.log]\nexecutor = "append_line"\n', "executor"),
        ('[tools.x]\nexecutor = "python:os:system"\n', "executor"),
        ('[tools.x]\nmediation = "mediated"\n', "offers no tool 'x'"),
        ('[tools.x]\nmediation = "reported"\nconfig = { a = 1 }\n', "offers no tool 'x'"),
        ('[tools.notes]\nconfig = { path = "/etc/passwd" }\n', "config.path"),
        ('[tools.notes]\nmediation = "mediated"\n', "never lower"),
        ('[tools.log]\nmediation = "reported"\n', "never lower"),
        ('[tools.lookup]\nmediation = "mediated"\n', "no executor to mediate"),
        ('[tools.log]\ncaller_config = ["path"]\n', "caller_config"),
        ('[tools.log]\n[session]\ncomponents = ["shell"]\n', "'shell' may not work"),
    ],
)
def test_what_a_caller_may_not_do_is_permission_denied(
    offered: OfferedTools, text: str, word: str
) -> None:
    with pytest.raises(PermissionDeniedError, match=word) as info:
        offered.effective(text)
    assert info.value.hint


@pytest.mark.parametrize(
    "text",
    ["[tools.log", "[listed.log]\n", "x = 1\n", "tools = 1\n", "[tools.log]\nbogus = 1\n",
     '[tools.log]\nmediation = "loud"\n', '[tools.log]\nconfig = { path = 3 }\n',
     '[session]\ntool_components = ["ghost"]\n'],
)  # fmt: skip
def test_what_is_not_a_workload_is_a_workload_error(offered: OfferedTools, text: str) -> None:
    with pytest.raises(WorkloadError, match="workload from the caller"):
        offered.effective(text)


def test_long_caller_text_is_clipped_in_the_error(offered: OfferedTools) -> None:
    name = "n" * 5000
    with pytest.raises(PermissionDeniedError) as info:
        offered.effective(f'[tools.{name}]\nmediation = "mediated"\n')
    assert len(info.value.message) < 400
    with pytest.raises(WorkloadError) as bad:
        offered.effective(f"[tools.log]\nconfig = {{ path = [{'1, ' * 5000}1] }}\n")
    assert "config.path" in bad.value.message and len(bad.value.message) < 300
    with pytest.raises(WorkloadError) as own:  # a caller's own tool, by a name not a name
        offered.effective(f'[tools."{name}!"]\nmediation = "reported"\n')
    assert len(own.value.message) < 300 and len(own.value.fields["table"]) < 80


@pytest.mark.parametrize(
    "text, where",
    [
        ('[tools.log]\nmediation = "mediated"\nexecutor = "nope"\n', "[tools.log] executor"),
        ('[tools.log]\nmediation = "mediated"\nexecutor = "append_line"\n'
         'config = { path = "/x" }\ncaller_config = ["pth"]\n', "[tools.log] caller_config"),
        ('[tools.log]\nmediation = "reported"\ncaller_config = ["path"]\n',
         "[tools.log] caller_config"),
        ('[tools.log]\nmediation = "mediated"\nexecutor = "append_line"\n'
         'config = { path = "/x" }\ncaller_config = "path"\n', "[tools.log] caller_config"),
        ("[tools.log\n", "not valid TOML"),
    ],
)  # fmt: skip
def test_a_bad_operator_file_names_file_table_and_key(text: str, where: str) -> None:
    with pytest.raises(WorkloadError) as info:
        parse_offered(text, "offered.toml")
    assert info.value.message.startswith("workload offered.toml: ")
    assert where in info.value.message


_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=8)  # UTF-8 can carry
_scalars = st.one_of(
    _text, st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False)
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)


@given(st.dictionaries(_text, st.dictionaries(_text, _values, max_size=3), max_size=3))
def test_tomltext_reads_back_as_written(tools: dict[str, dict[str, Any]]) -> None:
    doc = {"tools": tools, "session": {"components": ["chat"]}}
    assert tomllib.loads(dumps(doc)) == doc
