"""Each command's help ends with numbered examples (as s5cmd's does), and every example is a command
line the command accepts: its options exist and its values pass their checks. A renamed or dropped
option fails here, not in a user's shell."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from conftest import ROOT

COMMANDS = ("copy", "mv", "sync", "check", "ls", "rm", "du", "serve", "cat")


def _help(command: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "s3bulk", command, "--help"], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, env={"COLUMNS": "80", "PATH": ""})
    assert proc.returncode == 0, proc
    return proc.stdout


def _examples(text: str) -> list[tuple[int, str, str]]:
    """(number, what it does, command line) for each example after the help's "Examples:"."""
    lines = text.split("\nExamples:\n", 1)[1].splitlines()
    found = []
    for i, line in enumerate(lines):
        head, dot, what = line.strip().partition(". ")
        if dot and head.isdigit():
            found.append((int(head), what, lines[i + 1].strip()))
    return found


@pytest.mark.parametrize("command", COMMANDS)
def test_help_ends_with_numbered_examples_the_command_accepts(command, tmp_path, monkeypatch):
    # parsing an example runs the options' callbacks: --log-requests opens its file and sets the
    # variables workers inherit, so parse in a scratch directory and leave the environment as it was
    monkeypatch.chdir(tmp_path)
    for name in ("S3BULK_LOG_REQUESTS", "S3BULK_LOG_REQUESTS_HEADERS"):
        monkeypatch.setenv(name, "")  # recorded as it was (unset), so what the callbacks set is undone
        monkeypatch.delenv(name)
    import typer.main

    from s3bulk.cli import app

    text = _help(command)
    assert "\nExamples:\n" in text and text.index("\nExamples:\n") > text.rindex("╰"), text  # after the panels
    examples = _examples(text)
    assert [n for n, _, _ in examples] == list(range(1, len(examples) + 1)) and len(examples) >= 3, text
    group = typer.main.get_command(app)
    used = []
    for _, what, line in examples:
        assert what and len(line) <= 80, line
        # the s3bulk part of a pipeline (`tar c dir | s3bulk copy - s3://...`)
        words = next(shlex.split(part) for part in line.split("|") if part.split()[:1] == ["s3bulk"])
        used.append(words[1])  # serve's examples also copy from what it serves
        with group.make_context("s3bulk", words[1:]) as ctx:
            sub = group.get_command(ctx, words[1])  # type: ignore[attr-defined]
            sub.make_context(words[1], words[2:], parent=ctx).close()  # parses: a usage error raises
    assert used.count(command) >= 3, examples


@pytest.mark.unit
def test_the_panels_import_rich_only_when_help_is_asked_for(tmp_path):
    """Panels are drawn with rich (cli/help.py), imported only to draw them: a command that runs
    through typer, here `ls` of a local directory, imports no rich; its --help does."""
    (tmp_path / "a").write_bytes(b"x")

    def imported(*args: str) -> set[str]:
        run = subprocess.run([sys.executable, "-X", "importtime", "-m", "s3bulk", *args], capture_output=True,
                             text=True, cwd=ROOT, timeout=120, env={"COLUMNS": "80", "PATH": ""})
        assert run.returncode == 0, run.stderr[-2000:]
        return {line.rsplit("|", 1)[1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")}

    assert "rich" not in imported("ls", str(tmp_path))
    assert "rich" in imported("ls", "--help")


@pytest.mark.unit
def test_s3bulk_alone_prints_the_help_and_a_usage_error_stays_one_line(capsys):
    """`s3bulk` with no arguments: the help on stderr, exit 2, no "error:" before it (told by its
    message, not by typer's private exception class); any other usage error is one line."""
    from s3bulk import cli

    assert cli._run_typer([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Usage: s3bulk [OPTIONS] COMMAND") and "─ Commands " in err and "error:" not in err
    assert cli._run_typer(["nosuchcommand"]) == 2
    assert capsys.readouterr().err == "s3bulk: error: No such command 'nosuchcommand'.\n"
