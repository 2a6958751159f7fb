"""Count what issue 34 asks to bring down, over the syntax tree of s3bulk/.

Each count is a rule of the shape the architecture page draws: the engine
speaks only the store contract, one request value crosses the layers, one
event model, short functions, one error tree. Run it before and after a
change to see which way it moved; ``--check`` fails when a count is above the
ceiling issue 34 set, ``--list NAME`` prints where one count comes from.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "s3bulk"
ADAPTERS = ("s3bulk.stores.s3", "s3bulk.stores.local", "s3bulk.stores.memory", "s3bulk.stores.listget")
STORE_NAMES = {"src", "dst", "store", "source", "dest", "destination", "target", "backup", "inner", "into"}
KINDS = {"local", "s3", "memory", "listget", "stdin", "stdout", "http", "https", "file"}


@dataclass
class Count:
    """One rule: how many places break it now, the most issue 34 allows, and where."""

    name: str
    ceiling: int | None
    places: list[str] = field(default_factory=list)


def modules() -> Iterator[tuple[str, Path, ast.Module]]:
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent)
        dotted = ".".join(rel.with_suffix("").parts)
        if dotted.endswith(".__init__"):
            dotted = dotted[: -len(".__init__")]
        yield dotted, rel, ast.parse(path.read_text(), str(rel))


def absolute(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    keep = len(base) - node.level + (1 if is_package else 0)
    parts = base[:keep] + ([node.module] if node.module else [])
    return ".".join(parts)


def body_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        if isinstance(body[0].value.value, str):
            body = body[1:]
    if not body:
        return 0
    return (body[-1].end_lineno or body[-1].lineno) - body[0].lineno + 1


def params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    a = fn.args
    every = a.posonlyargs + a.args + a.kwonlyargs
    return [p for p in every if p.arg not in ("self", "cls")]


def is_any(annotation: ast.expr | None) -> bool:
    return (isinstance(annotation, ast.Name) and annotation.id == "Any") or (
        isinstance(annotation, ast.Attribute) and annotation.attr == "Any"
    )


def kind_branch(node: ast.Compare) -> bool:
    sides = [node.left, *node.comparators]
    has_kind = any(isinstance(s, ast.Attribute) and s.attr == "kind" for s in sides)
    strings: list[ast.expr] = []
    for s in sides:
        if isinstance(s, (ast.Tuple, ast.Set, ast.List)):
            strings.extend(s.elts)
        else:
            strings.append(s)
    has_literal = any(isinstance(s, ast.Constant) and s.value in KINDS for s in strings)
    return has_kind and has_literal


def count() -> list[Count]:
    imports = Count("engine imports of an adapter", 0)
    kinds = Count("location-kind branches in engine/", 3)
    probes = Count("getattr/hasattr probes in engine/", None)
    callbacks = Count("on_* callback parameters in engine/", 0)
    any_stores = Count("engine parameters holding a store typed Any", 0)
    ignores = Count("type: ignore in s3bulk/", 5)
    long_fns = Count("functions over 60 lines in s3bulk/", 2)
    wide_fns = Count("engine/cluster functions over 8 parameters", 2)
    errors = Count("exception classes outside errors.py and http/", 2)
    for dotted, rel, tree in modules():
        in_engine = dotted.startswith("s3bulk.engine")
        in_engine_or_cluster = in_engine or dotted.startswith("s3bulk.cluster")
        is_package = rel.name == "__init__.py"
        text = (ROOT.parent / rel).read_text()
        ignores.places += [f"{rel}:{i}" for i, line in enumerate(text.splitlines(), 1) if "type: ignore" in line]
        for node in ast.walk(tree):
            where = f"{rel}:{getattr(node, 'lineno', 0)}"
            if in_engine and isinstance(node, (ast.Import, ast.ImportFrom)):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [absolute(dotted, node, is_package)]
                )
                if isinstance(node, ast.ImportFrom) and names[0] == "s3bulk.stores":
                    names = [f"s3bulk.stores.{a.name}" for a in node.names]
                for name in names:
                    if any(name == a or name.startswith(a + ".") for a in ADAPTERS):
                        imports.places.append(f"{where} {name}")
            if in_engine and isinstance(node, ast.Compare) and kind_branch(node):
                kinds.places.append(where)
            if (
                in_engine
                and isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
            ):
                probes.places.append(f"{where} {ast.unparse(node)[:70]}")
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                ps = params(node)
                if in_engine:
                    callbacks.places += [f"{where} {node.name}({p.arg})" for p in ps if p.arg.startswith("on_")]
                    any_stores.places += [
                        f"{where} {node.name}({p.arg})"
                        for p in ps
                        if is_any(p.annotation) and (p.arg in STORE_NAMES or "store" in p.arg)
                    ]
                if body_lines(node) > 60:
                    long_fns.places.append(f"{where} {node.name} {body_lines(node)}")
                if in_engine_or_cluster and len(ps) > 8:
                    wide_fns.places.append(f"{where} {node.name} {len(ps)}")
            if (
                isinstance(node, ast.ClassDef)
                and rel.name != "errors.py"
                and not dotted.startswith("s3bulk.http")
                and any(
                    (isinstance(b, ast.Name) and (b.id.endswith(("Error", "Exception")) or b.id in EXCEPTION_BASES))
                    or (isinstance(b, ast.Attribute) and b.attr.endswith(("Error", "Exception")))
                    for b in node.bases
                )
            ):
                errors.places.append(f"{where} {node.name}")
    return [imports, kinds, probes, callbacks, any_stores, ignores, long_fns, wide_fns, errors]


EXCEPTION_BASES = {
    "S3BulkError", "Unsupported", "SourceChanged", "Interrupted", "StreamFailed", "KeyboardInterrupt",
    "BaseException", "Exception",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a count is over its ceiling")
    parser.add_argument("--list", metavar="WORD", help="print the places of the counts whose name has WORD")
    args = parser.parse_args()
    over = False
    for c in count():
        ceiling = "" if c.ceiling is None else f" (at most {c.ceiling})"
        flag = " OVER" if c.ceiling is not None and len(c.places) > c.ceiling else ""
        over |= bool(flag)
        print(f"{len(c.places):5d}  {c.name}{ceiling}{flag}")
        if args.list and args.list.lower() in c.name.lower():
            for place in c.places:
                print(f"         {place}")
    return 1 if args.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
