"""The Lambda handler's deadline checked while transfers run (issue 15): a page of 1,000 keys
can take longer than the margin, so the handler stops inside it, returns {"ok": true, "done":
false} with a resume token, and the next invocation copies exactly what is left. Real LocalStack;
the fake context's remaining time is driven by what has landed at DST, not by a clock."""

from __future__ import annotations

import json

from conftest import put_tree

N = 240


class DeadlineAfter:
    """Lambda's context: plenty of time until `landed()` reaches `after` objects, then 1 s left
    (under the handler's default 30 s margin)."""

    def __init__(self, landed, after: int | None) -> None:
        self.landed, self.after = landed, after
        self.calls = 0

    def get_remaining_time_in_millis(self) -> int:
        self.calls += 1
        if self.after is not None and self.landed() >= self.after:
            return 1_000
        return 900_000


def _etags(s3, bucket: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        out.update({c["Key"]: c["ETag"] for c in page.get("Contents", [])})
    return out


def test_handler_stops_inside_a_page_and_the_next_call_copies_the_rest(s3, make_bucket, endpoint):
    from s3bulk.aws_lambda import handler

    src, dst = make_bucket(), make_bucket()
    put_tree(s3, src, {f"k/{i:05d}": f"body {i} ".encode() * (1 + i % 7) for i in range(N)})
    event = {"source": f"s3://{src}/k/", "destination": f"s3://{dst}/k/", "endpoint_url": endpoint,
             # all N keys in one listed page; --max-rps keeps the run a few seconds long, so the deadline
             # (polled every 0.1 s) is seen inside the page even when this machine is fast or busy
             "options": {"concurrency": 4, "max-buffer": "16MiB", "max-rps": 60}}

    first = handler(event, DeadlineAfter(lambda: len(_etags(s3, dst)), after=N // 5))
    assert first["ok"] is True and first["done"] is False, first
    assert N // 5 <= first["copied"] < N, first       # stopped inside the page, not at its end
    assert len(_etags(s3, dst)) == first["copied"]    # what it counts is what landed, nothing half-done
    token = json.loads(json.dumps(first["continue"]))  # plain JSON, as Lambda passes it on

    # the rest at full speed: the rate cap only served to let the first call's deadline land in the page
    second = handler({**event, "continue": token, "options": {"concurrency": 4, "max-buffer": "16MiB"}},
                     DeadlineAfter(lambda: 0, after=None))
    assert second["ok"] is True and second["done"] is True and second["continue"] is None, second
    assert first["copied"] + second["copied"] == N    # nothing copied twice, nothing left out
    assert second["resumed_skipped"] == first["copied"]
    assert _etags(s3, dst) == _etags(s3, src)


def test_a_token_of_another_run_is_refused(s3, make_bucket, endpoint):
    from s3bulk.aws_lambda import handler

    src, dst, other = make_bucket(), make_bucket(), make_bucket()
    put_tree(s3, src, {f"{i:03d}": b"x" for i in range(30)})
    event = {"source": f"s3://{src}/", "destination": f"s3://{dst}/", "endpoint_url": endpoint,
             "options": {"concurrency": 2}}
    # under the margin from the first look: the run stops before it copies anything, and still hands
    # back a token (racing 30 tiny objects against a poll would let a fast machine copy them all)
    first = handler(event, DeadlineAfter(lambda: 0, after=0))
    assert first["ok"] is True and first["done"] is False and first["continue"], first
    wrong = handler({**event, "destination": f"s3://{other}/", "continue": first["continue"]},
                    DeadlineAfter(lambda: 0, after=None))
    assert wrong["ok"] is False and "another run" in wrong["error"], wrong
    assert _etags(s3, other) == {}
    garbage = handler({**event, "continue": {"journal": {"meta": "nonsense"}}}, None)
    assert garbage["ok"] is False and "resume token" in garbage["error"], garbage
