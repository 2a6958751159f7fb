"""What a scheduler (cron, a Kubernetes Job, a CI step) does: run ONE unchanged command line until it
exits 0. `s3bulk copy SRC DST --resume`, run three times: the first (no journal yet) starts and is
SIGKILLed midway, the second resumes and exits 0, the third (after completion: no journal) exits 0 too,
and the destination is the source, byte for byte. Through the real CLI against LocalStack."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading

from conftest import ROOT, bucket_tree, write_tree
from faultproxy import FaultProxy, s3_error


def test_one_copy_resume_line_three_times(s3, bucket, tmp_path, endpoint):
    tree = {f"d{i % 4}/f{i:03d}": os.urandom(100 + i) for i in range(80)}  # 4 pages of 20; killed at the 40th
    write_tree(tmp_path / "src", tree)
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))  # the default journal path, as in a job
    held, release = threading.Event(), threading.Event()
    puts = []

    def hold_40th(method, target, headers):
        if method == "PUT":
            puts.append(target)
            if len(puts) == 40:
                held.set()
                release.wait(300)
                return s3_error(503, "Service Unavailable", "SlowDown", "held by the test")
        return None

    host, port = re.match(r"http://([^:]+):(\d+)", endpoint).groups()
    with FaultProxy(host, int(port), [hold_40th]) as proxy:
        line = [sys.executable, "-m", "s3bulk", "copy", str(tmp_path / "src"), f"s3://{bucket}/",
                "--resume", "-w", "1", "-c", "4", "--page-size", "20", "--endpoint-url", proxy.url]

        def run() -> subprocess.CompletedProcess:
            return subprocess.run(line, capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)

        first = subprocess.Popen(line, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                                 env=env, start_new_session=True)
        try:
            assert held.wait(300), "the 40th PUT never came"
        finally:
            os.killpg(first.pid, signal.SIGKILL)
            err = first.communicate()[1]
            release.set()
        assert "nothing to resume" in err, err
        assert 0 < len(bucket_tree(s3, bucket)) < len(tree), "killed midway"
        second = run()
        assert second.returncode == 0, second.stderr
        assert "nothing to resume" not in second.stderr, "the second run resumes the first"
        third = run()
        assert third.returncode == 0, third.stderr
        assert "nothing to resume" in third.stderr, third.stderr
    assert bucket_tree(s3, bucket) == tree
