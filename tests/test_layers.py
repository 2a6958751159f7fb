"""The package's shape holds: no import cycle among s3bulk's modules, counting the imports made
inside functions (which keep start-up short and would otherwise hide a cycle), and the layers
contract of pyproject.toml is what scripts/test.sh checks with lint-imports.

import-linter's layers contract forbids a lower layer importing a higher one; a cycle between two
modules of one room (two stores, two parts of the engine) is this test's to find."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

PACKAGE = ROOT / "s3bulk"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every s3bulk module `name` imports, anywhere in it (the deepest module a dotted name names)."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()

    def deepest(dotted: str) -> str | None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names if a.name.startswith("s3bulk")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if not source.startswith("s3bulk"):
                continue
            targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source for a in node.names]
        for target in targets:
            module = deepest(target)
            if module is not None and module != name:
                out.add(module)
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_among_the_modules():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_one():
    """The check above can fail: two modules importing each other inside functions are a cycle."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_the_layers_contract_names_every_top_level_room():
    """Every subpackage and module at the package's root is in a layer of the contract (or is the
    package's public face), so a new room cannot slip past lint-imports."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = config["contracts"][0]["layers"]
    named = {part.strip() for layer in layers for part in layer.split("|")}
    rooms = {f"s3bulk.{p.stem if p.suffix else p.name}" for p in PACKAGE.iterdir()
             if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))}
    public_face = {"s3bulk.__init__", "s3bulk.__main__"}
    assert rooms - named - public_face == set()
