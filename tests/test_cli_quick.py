"""A plain `copy SRC DST` runs without typer (cli/quick.py): for every command line it takes, the
run gets exactly the option groups typer would give it; any other command line is typer's; and a
copy taken that way imports neither typer, rich nor botocore, with the same output and exit codes."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys

import pytest

from conftest import ROOT
from s3bulk.cli import quick


@pytest.mark.unit
def test_the_defaults_are_those_of_copy_s_declaration():
    from s3bulk.cli.commands.copy import parameters

    declared = {k: p.default for k, p in inspect.signature(parameters).parameters.items() if k not in ("src", "dst")}
    assert quick.DEFAULTS == declared


@pytest.mark.unit
def test_each_option_read_here_is_typer_s_option_of_that_name():
    import typer.main

    from s3bulk.cli import app

    params = typer.main.get_command(app).commands["copy"].params  # type: ignore[attr-defined]
    by_flag = {opt: p for p in params for opt in getattr(p, "opts", [])}
    for flag, name in quick.FLAGS.items():
        assert by_flag[flag].name == name and by_flag[flag].is_flag and not by_flag[flag].secondary_opts, flag
    for flag, name in quick.VALUES.items():
        option = by_flag[flag]
        assert option.name == name and not option.is_flag and option.nargs == 1 and not option.multiple, flag
        assert option.callback is None


def _typer_run(monkeypatch, argv):
    """The RunOptions typer's path hands run_transfer for `argv`."""
    from s3bulk import cli
    from s3bulk.cli import run

    seen = []
    monkeypatch.setattr(run, "run_transfer", lambda command, options, *a: seen.append((command, options)))
    assert cli._run_typer(argv) == 0
    return seen


@pytest.mark.unit
@pytest.mark.parametrize("argv", [
    ["copy", "s3://b/k", "/tmp/x"],
    ["copy", "/tmp/x", "s3://b/k", "-q", "--no-journal", "--endpoint-url", "http://127.0.0.1:4566"],
    ["copy", "--json", "s3://b/k", "-v", "/tmp/x", "--endpoint-url=http://h:1", "--region", "eu-west-1"],
    ["copy", "s3://b/", "s3://c/", "--src-endpoint-url", "http://a:1", "--dst-endpoint-url", "http://b:2",
     "--src-profile", "p", "--dst-profile", "q", "--src-region", "r1", "--dst-region", "r2", "--quiet"],
    ["copy", "s3://b/k", "x", "--profile=p", "--no-sign-request", "--path-style", "--verbose"],
])
def test_a_command_line_read_here_gives_the_run_what_typer_gives_it(monkeypatch, argv):
    from s3bulk.cli import run
    from s3bulk.cli.groups import RunOptions

    params = quick.copy_params(argv)
    assert params is not None
    monkeypatch.setattr(run, "run_transfer", lambda *a: None)
    assert _typer_run(monkeypatch, argv) == [("copy", RunOptions.of(params))]


@pytest.mark.unit
@pytest.mark.parametrize("argv", [
    [], ["copy"], ["copy", "a"], ["copy", "a", "b", "c"], ["sync", "a", "b"], ["mv", "a", "b"],
    ["copy", "a", "b", "--help"], ["copy", "a", "b", "-h"], ["copy", "-", "s3://b/k"], ["copy", "s3://b/k", "-"],
    ["copy", "a", "b", "-q", "-q"], ["copy", "a", "b", "-q", "--quiet"], ["copy", "a", "b", "-qv"],
    ["copy", "a", "b", "--endpoint-url"], ["copy", "a", "b", "--endpoint-url", "-q"],
    ["copy", "a", "b", "--endpoint-url="], ["copy", "a", "b", "--quiet=1"], ["copy", "a", "b", "--workers", "2"],
    ["copy", "a", "b", "--"], ["copy", "--", "a", "b"], ["copy", "", "b"], ["copy", "a", "b", "--endpoint"],
    ["copy", "a", "b", "--include", "*.jpg"], ["copy", "a", "b", "--version-id", "v"],
])
def test_any_other_command_line_is_typer_s(argv):
    assert quick.copy_params(argv) is None


@pytest.mark.unit
def test_log_requests_is_read_here_and_starts_the_log_as_typer_s_callback_does(monkeypatch, tmp_path):
    """`--log-requests FILE` (the scorecard's gib row gives it) is read here: the same values as
    typer's, the log started on FILE as its callback starts it; typer's option is the one named."""
    import typer.main

    from s3bulk.cli import app, options
    from s3bulk.http import requestlog

    by_flag = {opt: p for p in typer.main.get_command(app).commands["copy"].params  # type: ignore[attr-defined]
               for opt in getattr(p, "opts", [])}
    for flag, name in quick.STARTED.items():
        assert by_flag[flag].name == name and not by_flag[flag].is_flag and not by_flag[flag].multiple
    assert by_flag["--log-requests"].callback.__name__ == options._log_requests.__name__  # typer wraps it
    log = tmp_path / "requests.log"
    _no_request_log(monkeypatch)
    argv = ["copy", "s3://b/k", "/tmp/x", "--log-requests", str(log), "-q"]
    params = quick.copy_params(argv)
    assert params is not None and params["log_requests"] == str(log)
    assert os.environ[requestlog.ENV] == str(log) and log.exists()
    from s3bulk.cli import run
    from s3bulk.cli.groups import RunOptions

    monkeypatch.setattr(run, "run_transfer", lambda *a: None)
    assert _typer_run(monkeypatch, argv) == [("copy", RunOptions.of(params))]


@pytest.mark.unit
def test_a_log_file_that_cannot_be_opened_is_left_to_typer(monkeypatch, tmp_path):
    from s3bulk.http import requestlog

    _no_request_log(monkeypatch)
    unwritable = str(tmp_path / "no-such-dir" / "requests.log")
    assert quick.copy_params(["copy", "a", "b", "--log-requests", unwritable]) is None
    assert requestlog.ENV not in os.environ
    assert quick.copy_params(["copy", "a", "b", "--log-requests", "-"]) is None  # '-' (stderr): typer's


def _no_request_log(monkeypatch) -> None:
    """No request log in this process's environment, and none left after the test: starting the
    log sets it (requestlog.start), and a later in-process run would log to this test's file.
    (delenv of an unset name records nothing to undo; setenv first does.)"""
    from s3bulk.http import requestlog

    for name in (requestlog.ENV, requestlog.HEADERS_ENV):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


def _s3bulk(args, env=None):
    full = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-X", "importtime", "-m", "s3bulk", *args], capture_output=True,
                          text=True, env=full, cwd=ROOT, timeout=300)


def _imported(stderr: str) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def _errors(stderr: str) -> str:
    return "\n".join(line for line in stderr.splitlines() if not line.startswith("import time:"))


def test_one_object_is_copied_without_typer_rich_botocore_or_worker_processes(s3, bucket, endpoint, tmp_path, state_home):
    s3.put_object(Bucket=bucket, Key="one/k", Body=b"q" * 100)
    env = {"XDG_STATE_HOME": state_home, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    log = tmp_path / "requests.log"  # --log-requests too is read without typer
    down = _s3bulk(["copy", f"s3://{bucket}/one/k", str(tmp_path / "k"), "--endpoint-url", endpoint, "-q",
                    "--log-requests", str(log)], env)
    assert down.returncode == 0, _errors(down.stderr)
    assert (tmp_path / "k").read_bytes() == b"q" * 100
    assert " GET " in log.read_text()
    up = _s3bulk(["copy", str(tmp_path / "k"), f"s3://{bucket}/up/k", "--endpoint-url", endpoint, "-q"], env)
    assert up.returncode == 0, _errors(up.stderr)
    assert s3.get_object(Bucket=bucket, Key="up/k")["Body"].read() == b"q" * 100
    for run in (down, up):
        assert not [m for m in _imported(run.stderr) if m.startswith(("typer", "rich", "click", "botocore"))]
        # one object is one in-process worker's: no process pool is started (nor imported)
        assert not [m for m in _imported(run.stderr) if m.startswith("multiprocessing")]


@pytest.mark.parametrize("case", ["missing key", "missing bucket", "bad endpoint", "json"])
def test_errors_read_as_they_do_through_typer(s3, bucket, endpoint, tmp_path, state_home, case):
    """The same command line through quick.py and through typer (`--workers 0`, the default, is
    typer's to read): the same exit code, the same lines on stderr and stdout."""
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    args = {"missing key": ["copy", f"s3://{bucket}/nothere", str(tmp_path / "a"), "--endpoint-url", endpoint],
            "missing bucket": ["copy", "s3://no-such-bucket-s3bulk-quick/k", str(tmp_path / "b"),
                               f"--endpoint-url={endpoint}"],
            "bad endpoint": ["copy", f"s3://{bucket}/k", str(tmp_path / "c"), "--endpoint-url", "localhost:1"],
            "json": ["copy", f"s3://{bucket}/nothere", str(tmp_path / "d"), "--endpoint-url", endpoint, "--json"],
            }[case]
    assert quick.copy_params(args) is not None
    env = {"XDG_STATE_HOME": state_home}
    mine, theirs = _s3bulk(args, env), _s3bulk([*args, "--workers", "0"], env)
    assert mine.returncode == theirs.returncode != 0
    assert _errors(mine.stderr) == _errors(theirs.stderr) and _errors(mine.stderr)

    def timeless(out: str) -> str:
        import re

        return re.sub(r'"(elapsed_seconds|cpu_seconds|peak_rss_bytes)": [0-9.]+', "", out)
    assert timeless(mine.stdout) == timeless(theirs.stdout)
    assert not any((tmp_path / n).exists() for n in "abcd")


# `ls URL` read without typer (quick.ls_params, run by cli._ls through cli/ls_lines.run_ls)

def _ls_typer_values(monkeypatch, argv):
    """What typer's `ls` hands run_ls for `argv`."""
    from s3bulk import cli
    from s3bulk.cli.commands import ls

    seen = []
    monkeypatch.setattr(ls, "run_ls", lambda *a, **k: seen.append((a, k)))
    assert cli._run_typer(argv) == 0
    return seen


def _ls_quick_values(monkeypatch, argv):
    """What cli._ls hands run_ls for the values quick.py read from `argv`."""
    from s3bulk import cli
    from s3bulk.cli import ls_lines

    params = quick.ls_params(argv)
    assert params is not None
    seen = []
    monkeypatch.setattr(ls_lines, "run_ls", lambda *a, **k: seen.append((a, k)))
    cli._ls(params)
    return seen


@pytest.mark.unit
def test_ls_options_read_here_are_typer_s_with_its_defaults():
    import typer.main

    from s3bulk.cli import app
    from s3bulk.cli.commands.ls import ls_command

    declared = {k: p.default for k, p in inspect.signature(ls_command).parameters.items()}
    params = typer.main.get_command(app).commands["ls"].params  # type: ignore[attr-defined]
    by_flag = {opt: (p, True) for p in params for opt in getattr(p, "opts", [])}
    by_flag.update({opt: (p, False) for p in params for opt in getattr(p, "secondary_opts", [])})
    for flag, (name, value) in quick.LS_FLAGS.items():
        option, primary = by_flag[flag]
        assert option.name == name and option.is_flag and primary == value, flag
        assert quick.LS_DEFAULTS[name] == option.default
    for flag, name in quick.LS_VALUES.items():
        option, _ = by_flag[flag]
        assert option.name == name and not option.is_flag and option.nargs == 1 and not option.multiple, flag
        assert option.callback is None and quick.LS_DEFAULTS[name] is declared[name] is option.default is None


@pytest.mark.unit
@pytest.mark.parametrize("argv", [
    ["ls", "s3://b/"],
    ["ls", "s3://b/p/", "--json", "--endpoint-url", "http://127.0.0.1:4566"],
    ["ls", "--unordered", "s3://b/k", "--endpoint-url=http://h:1", "--region", "eu-west-1", "--profile=p"],
    ["ls", "s3://b/", "--no-recursive", "--no-sign-request", "--path-style", "--json"],
    ["ls", "s3://b/", "--recursive"],
    ["ls", "/tmp/dir"],
])
def test_an_ls_command_line_read_here_runs_ls_with_typer_s_values(monkeypatch, argv):
    assert _ls_quick_values(monkeypatch, argv) == _ls_typer_values(monkeypatch, argv)


@pytest.mark.unit
@pytest.mark.parametrize("argv", [
    ["ls"], ["ls", "a", "b"], ["ls", "-"], ["ls", ""], ["ls", "a", "--help"], ["ls", "a", "-c", "8"],
    ["ls", "a", "--json", "--json"], ["ls", "a", "--recursive", "--no-recursive"], ["ls", "a", "--json=1"],
    ["ls", "a", "--endpoint-url"], ["ls", "a", "--endpoint-url", "--json"], ["ls", "a", "--all-versions"],
    ["ls", "a", "--include", "*.jpg"], ["ls", "a", "--log-requests", "-"], ["ls", "--", "a"], ["du", "a"],
])
def test_any_other_ls_command_line_is_typer_s(argv):
    assert quick.ls_params(argv) is None


@pytest.mark.parametrize("case", ["listing", "missing prefix", "missing bucket", "bad endpoint", "no credentials"])
def test_ls_reads_as_it_does_through_typer(s3, bucket, endpoint, tmp_path, state_home, case):
    """The same `ls` through quick.py and through typer (`-c 64`, the default, is typer's to read):
    the same output, the same one error line and exit code; quick's imports no typer."""
    for key in ("d/a", "d/b", "e"):
        s3.put_object(Bucket=bucket, Key=key, Body=b"xy")
    args, env = {
        "listing": (["ls", f"s3://{bucket}/", "--endpoint-url", endpoint, "--json"], {}),
        "missing prefix": (["ls", f"s3://{bucket}/nothing/", "--endpoint-url", endpoint], {}),
        "missing bucket": (["ls", "s3://no-such-bucket-s3bulk-quick/", f"--endpoint-url={endpoint}"], {}),
        "bad endpoint": (["ls", f"s3://{bucket}/", "--endpoint-url", "localhost:1"], {}),
        "no credentials": (["ls", f"s3://{bucket}/", "--endpoint-url", endpoint],
                           {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_PROFILE": "",
                            "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
                            "AWS_CONFIG_FILE": str(tmp_path / "none")}),
    }[case]
    assert quick.ls_params(args) is not None
    env = dict(env, XDG_STATE_HOME=state_home)
    mine, theirs = _s3bulk(args, env), _s3bulk([*args, "-c", "64"], env)
    assert mine.returncode == theirs.returncode
    assert (mine.returncode == 0) == (case == "listing")
    assert _errors(mine.stderr) == _errors(theirs.stderr)
    assert mine.stdout == theirs.stdout
    if case == "listing":
        assert [line.split('"')[3] for line in mine.stdout.splitlines()] == ["d/a", "d/b", "e"]
    else:
        assert len(_errors(mine.stderr).splitlines()) == 1 and "Traceback" not in mine.stderr
    assert not [m for m in _imported(mine.stderr) if m.startswith(("typer", "rich", "click"))]
