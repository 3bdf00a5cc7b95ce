"""No ``getattr``/``hasattr`` on a store object anywhere in the package: what a store can do
is a capability it declares (``journal/stores/capabilities.py``), asked with one typed
lookup, never guessed from the attributes it happens to have.

Read with ``ast`` (nothing is imported). A store object is an expression the scan can tell
holds a store or a store's writer, by its name or by its type:

- a name ``store`` or ``_store``, or an attribute ``.store`` / ``._store`` of anything
  (``engine.store``, ``self._store``);
- a parameter or variable annotated with a store type (:data:`STORE_TYPES`: the core
  ``Store``/``Writer``/``ComponentStore``, each backend's classes, every capability), and
  ``self.X`` assigned from such a parameter or annotated so in its class;
- a variable assigned a store's ``writer(...)`` or ``component(...)``.

Anything else (a stream, a config, a handler) is not a store: ``getattr`` on it is fine.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from test_layering import PACKAGE, module_name

STORE_NAMES = {"store", "_store"}
STORE_TYPES = {
    "Store", "Writer", "ComponentStore", "ChainWriter",
    "FileStore", "FileWriter", "FileComponentStore", "HostFiles", "SessionMaking", "SessionListing",
    "MemoryStore", "MemoryWriter", "MemoryComponentStore", "MemoryHost",
    "JetStreamStore", "JetStreamWriter", "JetStreamComponentStore", "Extras",
    "CancelRequests", "ToolReceipts", "Workloads", "ProjectIndex", "Reindexable",
    "SealedExport", "KeyManagement", "SessionFiles", "StoredRecords", "RemoteWriters",
    "HarnessBook", "WriterTakeover",
}  # fmt: skip


def _dotted(node: ast.expr) -> str:
    """``a.b.c`` for a name or attribute chain, "" for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def _names_a_store_type(annotation: ast.expr | None) -> bool:
    """Whether an annotation mentions a store type (``Store | None``, ``"FileStore"``)."""
    if annotation is None:
        return False
    for node in ast.walk(annotation):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                if _names_a_store_type(ast.parse(node.value, mode="eval").body):
                    return True
            except SyntaxError:
                continue
        name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
        if isinstance(node, ast.Name | ast.Attribute) and name in STORE_TYPES:
            return True
    return False


class _Scan(ast.NodeVisitor):
    """The store probes of one module, as ``line: source`` strings."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.found: list[str] = []
        self.typed: list[set[str]] = [set()]  # store-typed names, per function scope
        self.fields: set[str] = set()  # self.X known to hold a store, module-wide

    def _is_store(self, node: ast.expr) -> bool:
        dotted = _dotted(node)
        if not dotted:
            return False
        last = dotted.rsplit(".", 1)[-1]
        return last in STORE_NAMES or dotted in self.typed[-1] or dotted in self.fields

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for item in node.body:  # ``inner: Writer`` declared on the class
            if (
                isinstance(item, ast.AnnAssign)
                and isinstance(item.target, ast.Name)
                and _names_a_store_type(item.annotation)
            ):
                self.fields.add(f"self.{item.target.id}")
        self.generic_visit(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        typed = {a.arg for a in args if _names_a_store_type(a.annotation)}
        self.typed.append(typed)
        for stmt in ast.walk(node):
            if not isinstance(stmt, ast.Assign):
                continue
            if _dotted(stmt.value) in typed:  # self.X = <a store-typed parameter>
                self.fields.update(_dotted(t) for t in stmt.targets if _dotted(t))
            elif self._opens_a_writer(stmt.value):  # x = <a store>.writer(uid)
                typed.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
        self.generic_visit(node)
        self.typed.pop()

    def _opens_a_writer(self, value: ast.expr) -> bool:
        """``<a store>.writer(...)`` or ``<a store>.component(...)``: a store's part."""
        return (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in ("writer", "component")
            and self._is_store(value.func.value)
        )

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if _names_a_store_type(node.annotation) and _dotted(node.target):
            self.typed[-1].add(_dotted(node.target))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if (
            isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and node.args
            and self._is_store(node.args[0])
        ):
            self.found.append(f"{node.lineno}: {ast.get_source_segment(self.source, node)}")
        self.generic_visit(node)


def store_probes(source: str) -> list[str]:
    """The ``getattr``/``hasattr`` calls on a store object in ``source``."""
    tree = ast.parse(source)
    scan = _Scan(source)
    scan.visit(tree)  # a first pass learns the self.X fields; the second flags with them
    fields = scan.fields
    scan = _Scan(source)
    scan.fields = fields
    scan.visit(tree)
    return scan.found


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_no_module_probes_a_store(path: Path) -> None:
    assert store_probes(path.read_text(encoding="utf-8")) == []


FLAGGED = [
    'def f(store):\n    return getattr(store, "session_dir", None)\n',
    'def f(engine):\n    return hasattr(engine.store, "shred")\n',
    'class A:\n    def f(self):\n        return getattr(self._store, "workload", None)\n',
    'def f(s: FileStore) -> None:\n    hasattr(s, "reindex")\n',
    'def f(s: "Store | None") -> None:\n    getattr(s, "master", None)\n',
    (
        "class H:\n    def __init__(self, inner: Writer) -> None:\n        self.inner = inner\n"
        '    def f(self):\n        return getattr(self.inner, "superseded", None)\n'
    ),
    'class H:\n    inner: JetStreamWriter\n    def f(self):\n        getattr(self.inner, "x")\n',
    'def f():\n    w: Writer = open_it()\n    return hasattr(w, "set_busy")\n',
    'def f(self, uid):\n    inner = self.store.writer(uid)\n    getattr(inner, "state", None)\n',
]

NOT_FLAGGED = [
    'def f(stream):\n    return getattr(stream, "isatty", None)\n',
    'def f(config):\n    return getattr(config.storage, "value", config.storage)\n',
    'def f(s: Settings) -> None:\n    getattr(s, "x")\n',
    'def f(store):\n    return getattr(other, "x")\n',  # the name, not the argument
    "def f(store: Store) -> None:\n    store.master\n",  # a typed access is no probe
    "class H:\n    def f(self, inner: Stream):\n        self.inner = inner\n"
    '        getattr(self.inner, "buffer")\n',
]


@pytest.mark.parametrize("source", FLAGGED)
def test_the_scan_flags_a_probe(source: str) -> None:
    assert len(store_probes(source)) == 1


@pytest.mark.parametrize("source", NOT_FLAGGED)
def test_the_scan_leaves_other_objects_alone(source: str) -> None:
    assert store_probes(source) == []
