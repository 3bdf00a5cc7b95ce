"""The checked-in generated code and descriptor set are exactly what the protos give.

Regenerates with grpcio-tools (``proto/generate.py``) into a temporary directory and fails
on any byte difference, so an edited proto without regenerated code, or a hand-edited
generated file, cannot land.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from google.protobuf import descriptor_pb2

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "agentsessions" / "wire" / "gen"


def _generate_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("proto_generate", ROOT / "proto" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("proto_generate", module)
    spec.loader.exec_module(module)
    return module


generate = _generate_module()


def test_regenerated_code_is_byte_identical(tmp_path: Path) -> None:
    generate.generate(tmp_path)
    fresh = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    checked_in = {p.name: p.read_bytes() for p in GEN.iterdir() if p.is_file()}
    assert sorted(fresh) == sorted(checked_in), "generated file set differs"
    stale = [name for name in fresh if fresh[name] != checked_in[name]]
    assert not stale, f"out of date (run python3 proto/generate.py): {stale}"
    expected = {f"{s}_pb2{x}" for s in ("common", "session", "harness", "harness_registry")
                for x in (".py", ".pyi", "_grpc.py")} | {"__init__.py"}  # fmt: skip
    assert set(fresh) == expected


def test_generated_modules_import_inside_the_package() -> None:
    text = (GEN / "session_pb2_grpc.py").read_text("utf-8")
    assert "from agentsessions.wire.gen import session_pb2 as session__pb2" in text
    assert "\nimport session_pb2" not in text and "\nimport common_pb2" not in text


def test_the_recorded_descriptor_set_is_current() -> None:
    recorded = descriptor_pb2.FileDescriptorSet.FromString(generate.BASELINE.read_bytes())
    now = descriptor_pb2.FileDescriptorSet.FromString(generate.descriptor_set())
    assert [f.name for f in recorded.file] == list(generate.FILES)
    assert recorded == now, "record the (additive) change: python3 proto/generate.py"


def test_import_fix_only_touches_our_own_modules() -> None:
    src = "import common_pb2 as c\nimport other_pb2 as o\nfrom google.protobuf import x\n"
    assert generate.fix_imports(src) == (
        "from agentsessions.wire.gen import common_pb2 as c\n"
        "import other_pb2 as o\nfrom google.protobuf import x\n"
    )


def test_check_mode_reports_a_stale_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stale = tmp_path / "old.binpb"
    stale.write_bytes(b"")  # an empty set: everything now is an addition, but not recorded
    monkeypatch.setattr(generate, "BASELINE", stale)
    assert generate.main(["--check"]) == 1
    assert stale.read_bytes() == b""  # --check writes nothing


def test_generate_refuses_a_breaking_change_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded = descriptor_pb2.FileDescriptorSet.FromString(generate.BASELINE.read_bytes())
    extra = recorded.file[0].message_type.add(name="GoneLater")  # recorded, absent now
    extra.field.add(name="x", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING)
    baseline = tmp_path / "base.binpb"
    baseline.write_bytes(recorded.SerializeToString())
    monkeypatch.setattr(generate, "BASELINE", baseline)
    monkeypatch.setattr(generate, "GEN_DIR", tmp_path / "gen")
    assert generate.main([]) == 1
    assert "not additive: message agentsessions.v1.GoneLater: removed" in capsys.readouterr().err
    assert not (tmp_path / "gen").exists()
    assert baseline.read_bytes() == recorded.SerializeToString()
