"""Retry-After on a 503 is waited for on the botocore path too (S3BULK_DATA_PATH=botocore, and every
control-plane call): tests/faultproxy.py in front of LocalStack answers the first GET of the object
503 SlowDown with Retry-After: 2; the copy retries it no sooner than the server asked (the backoff
alone would be ~0.2 s at most) and ends with the object intact. The bound is a lower one, which
no busy machine can break."""

from __future__ import annotations

import threading
import time

from conftest import read_tree
from faultproxy import is_object_request, s3_error


def test_botocore_path_waits_for_retry_after_of_a_503(cli, s3, bucket, make_fault_proxy, endpoint, tmp_path):
    s3.put_object(Bucket=bucket, Key="d/one", Body=b"payload")
    gets: list[float] = []
    lock = threading.Lock()

    def slow_down_once(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        if method != "GET" or not is_object_request(target):
            return None
        with lock:
            gets.append(time.monotonic())
            if len(gets) > 1:
                return None  # forwarded to LocalStack
        answer = s3_error(503, "Slow Down", "SlowDown", "Please reduce your request rate.", keep_alive=True)
        return answer.replace(b"\r\n\r\n", b"\r\nRetry-After: 2\r\n\r\n", 1)

    proxy = make_fault_proxy(endpoint, [slow_down_once])
    run = cli("copy", f"s3://{bucket}/d/", str(tmp_path / "out"), "--json", "--workers", "1",
              "--endpoint-url", proxy.url, env={"S3BULK_DATA_PATH": "botocore"})
    assert run.code == 0, run.err
    summary = run.summary
    assert summary["retries"] == 1 and summary["throttled"] == 1, (summary, gets)
    assert read_tree(tmp_path / "out") == {"one": b"payload"}
    assert len(gets) == 2 and gets[1] - gets[0] >= 1.9, gets
