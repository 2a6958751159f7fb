"""The progress display off a terminal and shell completion (issue 15), through the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT, write_tree


def test_progress_flag_forces_status_lines_when_stderr_is_not_a_terminal(cli, tmp_path):
    write_tree(tmp_path / "src", {f"f{i}": b"x" * 100 for i in range(5)})
    forced = cli("copy", str(tmp_path / "src"), str(tmp_path / "a"), "--progress", "--workers", "1")
    assert forced.code == 0, forced
    lines = [ln for ln in forced.err.splitlines() if ln.startswith("progress: ")]
    assert lines and lines[-1].startswith("progress: 5 / 5 objects, 500 B / 500 B"), forced.err
    assert "\x1b" not in forced.err  # plain lines: a log file stays readable
    default = cli("copy", str(tmp_path / "src"), str(tmp_path / "b"), "--workers", "1")
    assert default.code == 0 and "progress: " not in default.err, default


def _complete(words: str) -> list[str]:
    env = dict(os.environ, _S3BULK_COMPLETE="complete_bash", COMP_WORDS=words,
               COMP_CWORD=str(len(words.split()) - 1))
    proc = subprocess.run([sys.executable, "-m", "s3bulk"], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120)
    assert proc.returncode == 0, proc
    return proc.stdout.split()


def test_shell_completion(cli):
    shown = cli("--show-completion", "bash")
    assert shown.code == 0 and "_S3BULK_COMPLETE=complete_bash" in shown.out and "complete " in shown.out, shown
    assert "--install-completion" in cli("--help").out
    assert _complete("s3bulk co") == ["copy"]
    assert _complete("s3bulk sync --del") == ["--delete", "--delete-during"]
    assert {"--journal", "--journal-dir"} <= set(_complete("s3bulk copy --jour"))
