"""The operator's model catalog (models/catalog.py), the models a token holder may name
(server/modelpolicy.py) and the bounds on error texts (models/__init__.py, server/status.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsessions.cli.serveflags import serve_options
from agentsessions.controller.spi import ModelRequest
from agentsessions.errors import InvalidArgumentError, PermissionDeniedError
from agentsessions.models import create_model, parse_spec
from agentsessions.models.catalog import (
    CatalogModel,
    ModelCatalog,
    clip,
    guard_model,
    guarded,
    is_entry,
)
from agentsessions.models.scripted import ScriptedModel
from agentsessions.server.modelpolicy import ModelPolicy
from agentsessions.sessions.config import load_config
from agentsessions.sessions.local import open_local
from agentsessions.wire import status

POLICY = ModelPolicy({"fast": "openai:gpt-4o-mini,base_url=http://10.0.0.1/v1"}, "chosen:x")

ALLOWED = ["", "  ", "echo", " echo ", "scripted", "scripted:seed=3", "scripted:", "fast"]
ALLOWED += ["scripted:nondeterministic=1", "scripted:seed=1,delay=0"]
REFUSED = [
    "scripted:file=/etc/agentsessions/master.key",
    "scripted:seed=1,file=x",
    "scripted:file=",
    "scripted: file = x",
    "openai:gpt-4o-mini",
    "openai:x,base_url=http://127.0.0.1:9/v1",
    "openai:x,path=/v1/x",
    "echo:x=1",
    "scripted:junk",
    "fast:x=1",
    "gpt-4o-mini",
    "llama3:8b",
    "unknown",
    "openai:" + "x" * 100_000,
]


@pytest.mark.parametrize("spec", ALLOWED)
def test_a_token_holder_may_name_these(spec: str) -> None:
    POLICY.check(spec)


@pytest.mark.parametrize("spec", REFUSED)
def test_a_token_holder_may_not_name_these(spec: str) -> None:
    with pytest.raises(PermissionDeniedError) as info:
        POLICY.check(spec)
    assert "offered: fast, echo, scripted, scripted:seed=N" in info.value.message
    assert "serve --model NAME=SPEC" in info.value.hint
    assert "10.0.0.1" not in info.value.message  # the catalog's specs are never told
    assert spec[:201] not in info.value.message or len(spec) <= 200


def test_the_servers_own_default_is_allowed_and_none_means_none_given() -> None:
    POLICY.check("chosen:x")  # serve --model SPEC: the operator's choice
    POLICY.check(None)
    with pytest.raises(PermissionDeniedError):
        ModelPolicy().check("chosen:x")


def test_the_guard_checks_only_within_and_is_restored() -> None:
    guard_model("scripted:file=/x")  # no guard installed: nothing checked
    with guarded(POLICY.check):
        guard_model("fast")
        with pytest.raises(PermissionDeniedError):
            guard_model("scripted:file=/x")
    guard_model("scripted:file=/x")


def test_catalog_names_resolve_and_are_checked() -> None:
    catalog = ModelCatalog({"fast": "scripted:seed=3", "slow-1.b_2": "echo"})
    assert catalog.resolve("fast") == "scripted:seed=3"
    assert catalog.resolve(" fast ") == "scripted:seed=3"
    assert catalog.resolve("echo") == "echo"
    assert repr(catalog) == "ModelCatalog(['fast', 'slow-1.b_2'])"  # never the specs
    model = create_model("fast", catalog=catalog)
    assert isinstance(model, CatalogModel)
    assert isinstance(model.inner, ScriptedModel)
    assert (model.inner.seed, model.spec) == (3, "scripted:seed=3")
    answer = model.complete(ModelRequest("fast", ({"role": "user", "parts": []},), None))
    direct = create_model("scripted:seed=3")
    same = direct.complete(ModelRequest("scripted:seed=3", ({"role": "user", "parts": []},), None))
    assert answer == same  # asked as if the request named the SPEC
    for name in ("echo", "scripted", "openai", "a b", "x:y", "", "-x", "n" * 65):
        with pytest.raises(InvalidArgumentError):
            ModelCatalog({name: "echo"})
    for spec in ("", "fast", "gpt-4o", "scripted:junk"):  # a SPEC is a spec, never a NAME
        with pytest.raises(InvalidArgumentError):
            ModelCatalog({"other": spec})
    with pytest.raises(InvalidArgumentError, match="defined twice"):
        ModelCatalog.parse(["a=echo", "a=scripted"])


def test_a_name_unknown_to_the_catalog_says_where_names_come_from() -> None:
    with pytest.raises(InvalidArgumentError) as info:
        create_model("fast")
    assert "serve --model NAME=SPEC" in info.value.hint


def test_entries_and_specs_are_told_apart() -> None:
    assert is_entry("fast=openai:gpt-4o-mini,base_url=http://h/v1")
    assert is_entry("fast=scripted:seed=3")
    for spec in ("scripted:seed=7", "openai:x,base_url=http://h/v1", "echo", "", "=echo"):
        assert not is_entry(spec)


def test_serve_model_flags_are_a_default_and_a_catalog() -> None:
    opts = serve_options(
        "127.0.0.1:0",
        "file",
        ["fast=scripted:seed=3", "scripted:seed=7", "big=openai:gpt-4o,base_url=http://h/v1"],
        "auto",
        1.0,
        [],
    )
    assert opts.model == "scripted:seed=7"
    assert opts.models == {"fast": "scripted:seed=3", "big": "openai:gpt-4o,base_url=http://h/v1"}
    with pytest.raises(InvalidArgumentError, match="one default model"):
        serve_options("127.0.0.1:0", "file", ["echo", "scripted"], "auto", 1.0, [])
    with pytest.raises(InvalidArgumentError, match="provider's name"):
        serve_options("127.0.0.1:0", "file", ["echo=scripted"], "auto", 1.0, [])
    with pytest.raises(InvalidArgumentError, match="unknown model provider"):
        serve_options("127.0.0.1:0", "file", ["fast=gpt-4o"], "auto", 1.0, [])


def test_the_config_file_defines_models(tmp_path: Path) -> None:
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "config.toml"
    path.write_text('[models.fast]\nspec = "scripted:seed=3"\n[models.big]\nspec = "echo"\n')
    assert load_config(tmp_path, env={}).models == {"fast": "scripted:seed=3", "big": "echo"}
    with open_local(tmp_path, models={"big": "scripted:seed=1"}) as engine:
        assert dict(engine.models) == {"fast": "scripted:seed=3", "big": "scripted:seed=1"}
    for text, why in [
        ('[models]\nfast = "echo"\n', "exactly one key, spec"),
        ('[models.fast]\nspec = "echo"\nurl = "x"\n', "exactly one key, spec"),
        ("[models.fast]\nspec = 3\n", "spec must be a str"),
        ('[models.echo]\nspec = "scripted"\n', "provider's name"),
        ('[models.fast]\nspec = "nope"\n', "unknown model provider"),
    ]:
        path.write_text(text)
        with pytest.raises(InvalidArgumentError, match=why) as info:
            load_config(tmp_path, env={})
        assert str(path) in info.value.message


def test_a_spec_is_quoted_at_most_200_bytes() -> None:
    huge = "openai:x,base_url=ftp://" + "x" * 100_000
    for spec in (
        huge,
        "openai:x,read_timeout=" + "1" * 9999,
        "openai:m,k" + "e" * 9999 + "=1",
        "scripted:seed=" + "9" * 10_000,
        "nope" * 30_000,
        "scripted:" + "k" * 9999,
    ):
        with pytest.raises(InvalidArgumentError) as info:
            create_model(spec)
        text = f"{info.value.message} {info.value.hint}"
        assert len(text.encode()) < 1024
        assert not any(spec[i : i + 201] in text for i in range(0, len(spec) - 200, 50))
    assert clip("é" * 300).endswith("...(600 bytes)")
    assert len(clip("é" * 300).encode()) <= 200
    assert clip("short") == "short"
    assert parse_spec(" echo ").kind == "echo"


def test_every_status_text_is_bounded() -> None:
    caller = "t" * 10_000
    exc = InvalidArgumentError(
        f"invalid page cursor {caller!r} and more: {caller}", hint=caller, project=caller
    )
    for text in (status.details(exc), *(v for _k, v in status.trailers(exc))):
        assert len(text.encode()) <= 2 * status.TEXT_LIMIT
        assert caller[:201] not in text
    spaced = " ".join(["word"] * 5000)
    assert len(status.bounded(spaced).encode()) <= status.TEXT_LIMIT
    assert status.bounded("a plain message") == "a plain message"


def test_sessions_record_the_name_and_turns_replay_and_go_on_through_the_catalog(
    tmp_path: Path,
) -> None:
    catalog = {"fast": "scripted:seed=3"}
    with open_local(tmp_path, runtime="local", models=catalog) as engine:
        uid = engine.run(None, ["one"], harness="chat", model="fast").session.uid
        assert engine.get(uid).model == "fast"
        calls = [r.event for r in engine.read(uid) if r.event["kind"] == "EVENT_MODEL_CALL"]
        assert calls and all("seed" not in str(c) for c in calls)
        report = engine.rerun(uid)
        assert report.identical and report.model_calls == 0
    with open_local(tmp_path, runtime="local", models=catalog) as engine:  # another engine
        engine.run(uid, ["two"])
        texts = str([r.event for r in engine.read(uid)])
        assert texts.count("scripted-3-") == 2
    with open_local(tmp_path, runtime="local") as engine, pytest.raises(InvalidArgumentError):
        engine.run(uid, ["three"])  # no catalog: the NAME means nothing, refused unwritten
