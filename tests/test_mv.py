"""`s3bulk mv`: each source object is deleted only after its copy landed; a copy that fails leaves its
source. Through the real CLI against LocalStack, failures injected by a proxy that refuses some PUTs."""

from __future__ import annotations

import re

from conftest import bucket_tree, put_tree, read_tree, write_tree
from faultproxy import FaultProxy, s3_error


def test_mv_local_to_s3_keeps_the_sources_whose_copy_failed(cli, s3, bucket, tmp_path, endpoint):
    tree = {f"d{i % 3}/f{i:03d}": f"body {i}".encode() for i in range(120)}
    write_tree(tmp_path / "src", tree)
    refused = {k for k in tree if k.endswith("7")}

    def refuse(method, target, headers):
        if method == "PUT" and any(target.split("?")[0].endswith("/" + k) for k in refused):
            return s3_error(403, "Forbidden", "AccessDenied", "Access Denied")
        return None

    host, port = re.match(r"http://([^:]+):(\d+)", endpoint).groups()
    with FaultProxy(host, int(port), [refuse]) as proxy:
        r = cli("mv", str(tmp_path / "src"), f"s3://{bucket}/", "--json", "--endpoint-url", proxy.url,
                "--no-journal", "--page-size", "25")
    assert r.code == 1, r
    assert r.summary["copied"] == len(tree) - len(refused) and r.summary["failed"] == len(refused), r.summary
    assert r.summary["deleted"] == len(tree) - len(refused), r.summary
    assert bucket_tree(s3, bucket) == {k: v for k, v in tree.items() if k not in refused}
    assert read_tree(tmp_path / "src") == {k: tree[k] for k in refused}, "only failed copies keep their source"


def test_mv_s3_to_local_and_one_object(cli, s3, bucket, tmp_path):
    tree = {f"p/{i:03d}": bytes([i]) * (i + 1) for i in range(60)} | {"single.txt": b"one"}
    put_tree(s3, bucket, tree)
    r = cli("mv", f"s3://{bucket}/p/", str(tmp_path / "out"), "--json", "--no-journal")
    assert r.code == 0, r
    assert read_tree(tmp_path / "out") == {k[2:]: v for k, v in tree.items() if k.startswith("p/")}
    assert bucket_tree(s3, bucket) == {"single.txt": b"one"}
    r = cli("mv", f"s3://{bucket}/single.txt", str(tmp_path / "one.txt"), "--no-journal")
    assert r.code == 0, r
    assert (tmp_path / "one.txt").read_bytes() == b"one" and bucket_tree(s3, bucket) == {}
