"""The user docs say what the program does: each command page of the site (docs/commands/, written
by scripts/cli_docs.py) holds the help the installed `s3bulk` prints and names every option of
every command; the guarantees page lists every hostile case tests/test_hostile.py runs; the
README stays a landing page (its two set-up commands first, at most 16 KB) and no page a user
reads cites an issue number. Each check runs the real command line, as a user would read `--help`."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

DOCS = ROOT / "docs"
PAGES = DOCS / "commands"
S3BULK = str(Path(sys.executable).parent / "s3bulk")
ENV = dict(os.environ, COLUMNS="80")  # the width scripts/cli_docs.py renders the help at


def help_text(*command: str) -> str:
    run = subprocess.run([S3BULK, *command, "--help"], env=ENV, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout.rstrip("\n")


def commands() -> list[str]:
    """The commands `s3bulk --help` lists (its Commands panel), in its order."""
    section = help_text().split("─ Commands ", 1)[1]
    return [m.group(1) for m in re.finditer(r"^│ (\S+)\s", section, re.M)]


def panel_titles(text: str) -> list[str]:
    """The panels a `--help` text draws (`╭─ Options ───╮`), in its order."""
    return re.findall(r"^╭─ (.+?) ─+╮$", text, re.M)


def folded_help(page: str) -> str:
    """The `--help` text a page keeps (the folded block at its end), indentation removed."""
    block = page.split('??? note "As `', 1)[1].split("```text\n", 1)[1].split("\n    ```", 1)[0]
    return "\n".join(line[4:] for line in block.splitlines())


def option_flags(text: str) -> set[str]:
    """Every flag spelling in a `--help` text's option lines (`-w`, `--workers`, `--no-progress`)."""
    flags = set()
    for line in text.splitlines():
        if re.match(r"^│ -", line):
            names = re.split(r"\s{2,}", line.strip("│ "), maxsplit=1)[0]
            flags.update(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", names))
    return flags


def test_the_committed_pages_are_what_the_script_writes():
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "cli_docs.py"), "--check"], env=ENV,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("command", ["", *commands()])
def test_each_command_page_holds_the_help_the_cli_prints(command):
    page_path = PAGES / f"{command or 'index'}.md"
    assert page_path.exists(), f"no page for `s3bulk {command}`: run scripts/cli_docs.py"
    page = page_path.read_text()
    printed = help_text(*([command] if command else []))
    assert folded_help(page) == printed
    # and the tables above it (what the site shows) name every option the help lists
    tables = page.split('??? note "As `', 1)[0]
    missing = {flag for flag in option_flags(printed) if f"`{flag}" not in tables and f" {flag}" not in tables}
    assert not missing, f"s3bulk {command}: options the page's tables leave out: {sorted(missing)}"
    title = f"# s3bulk {command}".rstrip()
    assert title + "\n" in page
    # the terminal draws the panels the page has as headings, in the same order
    headings = re.findall(r"^## (.+)$", tables.split("## Usage", 1)[1], re.M)
    shown = [h.replace("\\", "") for h in headings if h not in ("Commands", "Examples")]
    assert panel_titles(printed) == shown + (["Commands"] if "## Commands" in tables else [])


@pytest.mark.unit
def test_each_example_on_a_page_is_its_words_then_a_block_holding_only_the_command():
    for page_path in sorted(PAGES.glob("*.md")):
        page = page_path.read_text()
        if page_path.name == "index.md":
            assert "## Examples" not in page
            continue
        section = page.split("\n## Examples\n", 1)[1].split('??? note "As `', 1)[0]
        blocks = re.findall(r"^([^\n]*)\n\n```sh\n(.*?)\n```\n", section, re.M | re.S)
        assert len(blocks) >= 3, page_path
        for words, block in blocks:
            assert words.endswith(":") and not words[0].isdigit(), (page_path, words)
            # one command line, no number, no title: the copy button copies something that runs
            assert "\n" not in block and "s3bulk " in block and not re.match(r"\d+\.", block), (page_path, block)
        headings = re.findall(r"^## (.+)$", page.split("## Usage", 1)[1], re.M)
        assert headings[-1] == "Examples", f"{page_path.name}: Examples must come after the options"


def _cli_docs():
    """scripts/cli_docs.py as a module (it is a script, not part of the package)."""
    if "cli_docs" not in sys.modules:
        spec = importlib.util.spec_from_file_location("cli_docs", ROOT / "scripts" / "cli_docs.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["cli_docs"] = module  # its dataclass looks its module up by name
        spec.loader.exec_module(module)
    return sys.modules["cli_docs"]


@pytest.mark.unit
def test_an_option_or_argument_without_help_is_named_by_the_check():
    import typer
    import typer.main

    app = typer.Typer()

    @app.command()
    def tool(name: str = typer.Argument(...), said: int = typer.Option(1, "--said", help="has help"),
             silent: int = typer.Option(1, "--silent"), hidden: int = typer.Option(1, "--hidden", hidden=True)) -> None:
        """A command with help."""

    command = typer.main.get_command(app)
    ctx = command.make_context("tool", ["x"])
    assert _cli_docs().without_help(command, ctx) == ["tool NAME", "tool --silent"]


@pytest.mark.unit
def test_no_option_of_s3bulk_is_without_help():
    docs = _cli_docs()
    assert [name for command, ctx in docs.contexts() for name in docs.without_help(command, ctx)] == []


def test_every_command_has_a_page_and_no_page_is_left_over():
    listed = {f"{c}.md" for c in commands()} | {"index.md"}
    assert {p.name for p in PAGES.glob("*.md")} == listed


def test_the_guarantees_page_lists_every_hostile_case():
    ids = re.findall(r'^@case\("([^"]+)"', (ROOT / "tests" / "test_hostile.py").read_text(), re.M)
    assert len(ids) >= 30
    page = (DOCS / "reference" / "guarantees.md").read_text()
    assert [i for i in ids if f"`{i}`" not in page] == []


def _first_code_block(text: str) -> str:
    return text.split("```", 2)[1].split("\n", 1)[1]


def test_the_readme_is_a_landing_page_with_the_set_up_commands_first():
    readme = (ROOT / "README.md").read_bytes()
    assert len(readme) <= 16 * 1024, f"README.md is {len(readme)} bytes; move detail into docs/"
    block = _first_code_block(readme.decode()).splitlines()
    assert [line.split()[0] for line in block] == ["./scripts/demo.sh", "./scripts/test.sh"], block


def test_getting_started_in_the_docs_is_the_readmes():
    """tests/test_user_meets.py runs the README's block; the site's copy must be the same lines."""
    def block(text: str) -> str:
        return text.split("<!-- getting-started:begin -->", 1)[1].split("<!-- getting-started:end -->", 1)[0]
    assert block((DOCS / "getting-started.md").read_text()) == block((ROOT / "README.md").read_text())


def test_no_issue_numbers_where_users_read():
    pattern = re.compile(r"issue [0-9]+|#[0-9]{2}\b", re.I)
    found = []
    for path in [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted(DOCS.rglob("*.md"))]:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == []
