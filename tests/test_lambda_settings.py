"""The Lambda handler resolves each S3 side's settings once, from the event and its own
environment, and the whole call uses them (issue 24): an endpoint given only by
AWS_ENDPOINT_URL_S3 in the function's environment is where the objects go. Real LocalStack."""

from __future__ import annotations

from conftest import bucket_tree, put_tree


def test_the_handler_resolves_the_endpoint_from_its_environment_once(s3, make_bucket, endpoint, tmp_path,
                                                                    monkeypatch):
    from s3bulk.aws_lambda import handler
    from s3bulk.stores.s3 import setup as s3setup

    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", endpoint)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # nothing resolved before
    monkeypatch.setattr(s3setup, "_SETTINGS_MEMO", {})
    resolved = []
    real = s3setup.resolve_settings
    monkeypatch.setattr(s3setup, "resolve_settings", lambda opts: resolved.append(opts) or real(opts))
    src, dst = make_bucket(), make_bucket()
    objects = {f"k/{i:03d}": f"body {i}".encode() for i in range(40)}
    put_tree(s3, src, objects)
    out = handler({"source": f"s3://{src}/k/", "destination": f"s3://{dst}/k/", "options": {"concurrency": 4}},
                  None)
    assert out["ok"] is True and out["done"] is True and out["copied"] == len(objects), out
    assert bucket_tree(s3, dst) == objects
    # once per side for the whole call (no file here: from the environment, without botocore), never
    # again by the stores
    assert len(resolved) == 2
