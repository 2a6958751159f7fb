"""The docs hold to the code: every `s3bulk.X` they name exists, every public name is in the API
reference exactly once, and every Python snippet type-checks (mypy, once over all of them).

A snippet that cannot stand alone (it names the reader's own classes) is preceded by a
`<!-- no-check: why -->` line; keep those few."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.unit

DOCS = Path(ROOT) / "docs"
# names the docs say do not exist: the older names that are gone, the example of a typo
ABSENT = {"s3bulk.acopy", "s3bulk.async_sync", "s3bulk.alist", "s3bulk.mv", "s3bulk.typo"}
MENTION = re.compile(r"(?<![\w.-])s3bulk(?:\.[A-Za-z_]\w*)+")
SNIPPET = re.compile(r"^(<!-- no-check[^\n]*-->\n)?```python\n(.*?)^```", re.M | re.S)


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def resolve(dotted: str) -> object:
    """The object `s3bulk.a.b` names: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(dotted)


def test_every_name_the_docs_mention_exists():
    mentioned: dict[str, str] = {}
    for page in pages():
        for found in MENTION.finditer(page.read_text()):
            name = found.group(0)
            if name.endswith(".part") or name.endswith(".py"):  # file names: .s3bulk.part, s3bulk.py
                continue
            mentioned.setdefault(name, str(page.relative_to(ROOT)))
    assert len(mentioned) > 40, sorted(mentioned)
    missing = []
    for name, page in sorted(mentioned.items()):
        if name in ABSENT:
            assert not hasattr(resolve(name.rsplit(".", 1)[0]), name.rsplit(".", 1)[1]), f"{name} exists ({page})"
            continue
        try:
            resolve(name)
        except (ImportError, AttributeError):
            missing.append(f"{name} ({page})")
    assert not missing, missing


def test_the_api_reference_renders_every_public_name_once():
    import s3bulk

    page = (DOCS / "reference" / "api.md").read_text()
    rendered = re.findall(r"^::: (s3bulk\.\S+)", page, re.M)
    assert len(rendered) == len(set(rendered)), [n for n in rendered if rendered.count(n) > 1]
    assert sorted(set(f"s3bulk.{n}" for n in s3bulk.__all__) - set(rendered)) == []
    for name in rendered:
        resolve(name)
    assert "::: s3bulk.model\n" not in page, "the whole model module would show WorkUnit and the names twice"


def test_every_python_snippet_in_the_docs_type_checks(tmp_path):
    sources: dict[str, str] = {}
    skipped = 0
    for page in pages():
        for n, found in enumerate(SNIPPET.finditer(page.read_text())):
            if found.group(1):
                skipped += 1
                continue
            name = f"{page.relative_to(DOCS).with_suffix('')}_{n}".replace("/", "_").replace("-", "_")
            (tmp_path / f"snippet_{name}.py").write_text(found.group(2))
            sources[name] = str(page.relative_to(ROOT))
    assert len(sources) >= 6 and skipped <= 3, (sorted(sources), skipped)
    # the project's mypy options and cache: the s3bulk modules the snippets import are checked
    # already (scripts/test.sh runs mypy first), so only the snippets are new work
    run = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(Path(ROOT) / "pyproject.toml"),
                          "--cache-dir", str(Path(ROOT) / ".mypy_cache"), "--no-error-summary",
                          *sorted(str(p) for p in tmp_path.glob("*.py"))],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
