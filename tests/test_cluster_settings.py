"""A cluster run uses exactly the S3 settings the driver resolved (issue 24).

The Dask scheduler and its two workers are separate processes started with an environment that has
AWS credentials (test/test: LocalStack's) and nothing else of AWS: no endpoint, no region, no
config file (HOME is an empty directory), and an HTTP(S) proxy on a port nobody listens on. The
driver alone is given the endpoint: by AWS_ENDPOINT_URL, by AWS_ENDPOINT_URL_S3, by a profile's
endpoint_url, or by a profile's `services` section. Copy (S3 -> local) and sync --delete (local ->
S3) then end identical to the source: the workers went where the driver was told, with the driver's
proxy settings (none), not their own. The plan sent to the workers holds no secret (and a run that
would need an SSE-C key there is refused). A worker that cannot reach the endpoint ends the run with
one line naming the worker and the endpoint.

One scheduler and two workers serve the whole module (start-ups are the slow part)."""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import bucket_tree, put_tree, read_tree, write_tree
from daskprocs import DaskProcs, wait_for

distributed = pytest.importorskip("distributed")

PROFILE = "s3bulk-cluster-settings"
DEAD_PROXY = "http://127.0.0.1:9"  # the workers' own proxy: nothing listens there


def _worker_env(home: Path) -> dict[str, str]:
    """This environment without anything of AWS or proxies, then AWS credentials only (and a
    proxy that leads nowhere, which the driver does not use)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("AWS_") and "proxy" not in k.lower() and k != "S3BULK_TEST_ENDPOINT"}
    env.update(HOME=str(home), AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test",
               AWS_EC2_METADATA_DISABLED="true", HTTP_PROXY=DEAD_PROXY, HTTPS_PROXY=DEAD_PROXY,
               http_proxy=DEAD_PROXY, https_proxy=DEAD_PROXY)
    env.pop("XDG_CACHE_HOME", None)  # the workers' address cache lives in their own HOME
    return env


@pytest.fixture(scope="module")
def bare_cluster(tmp_path_factory, aws_env):
    """One `dask scheduler` and two `dask worker` processes whose environment has no endpoint."""
    tmp = tmp_path_factory.mktemp("dask-bare")
    home = tmp / "home"
    home.mkdir()
    procs = DaskProcs(tmp, env=_worker_env(home))
    try:
        procs.worker("w1")
        procs.worker("w2")
        wait_for("two workers", lambda: {"w1", "w2"} <= procs.names())
        yield procs
    finally:
        procs.close()


def _tree(n: int) -> dict[str, bytes]:
    objects = {f"d{i % 3}/obj-{i:04d}.bin": os.urandom(50 + (i * 53) % 2000) for i in range(n)}
    objects["ünï/çødé.txt"] = "unicode ✓".encode()
    return objects


def _driver_env(way: str, endpoint: str, tmp: Path) -> dict[str, str]:
    """The driver's environment: the endpoint given one way, no other endpoint anywhere."""
    if way == "AWS_ENDPOINT_URL":
        return {"AWS_ENDPOINT_URL": endpoint}
    if way == "AWS_ENDPOINT_URL_S3":
        return {"AWS_ENDPOINT_URL_S3": endpoint}
    config = tmp / "aws-config"
    if way == "profile endpoint_url":
        config.write_text(f"[profile {PROFILE}]\nendpoint_url = {endpoint}\n")
    else:  # the profile's services section
        config.write_text(f"[profile {PROFILE}]\nservices = s3bulk-local\n\n"
                          f"[services s3bulk-local]\ns3 =\n  endpoint_url = {endpoint}\n")
    return {"AWS_CONFIG_FILE": str(config), "AWS_PROFILE": PROFILE}


WAYS = ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "profile endpoint_url", "profile services section"]


def _ok(run) -> None:
    assert run.code == 0, run.err
    assert "Traceback" not in run.err, run.err


@pytest.mark.parametrize("way", WAYS)
def test_workers_go_to_the_endpoint_the_driver_was_given(way, cli, s3, make_bucket, endpoint, tmp_path,
                                                         bare_cluster):
    """copy S3 -> local, then sync --delete local -> S3, on workers that know no endpoint: both end
    identical to their source."""
    objects = _tree(90)
    src = make_bucket()
    put_tree(s3, src, objects)
    env = _driver_env(way, endpoint, tmp_path)
    down = tmp_path / "down"
    run = cli("copy", f"s3://{src}/", str(down), "--json", "--page-size", "20", "--no-journal",
              "--cluster", bare_cluster.address, env=env, endpoint_url=False)
    _ok(run)
    assert run.summary["copied"] == len(objects), run.summary
    assert read_tree(down) == objects

    dst = make_bucket()
    put_tree(s3, dst, {"stale/extra.bin": b"to be deleted", "d0/obj-0000.bin": b"different"})
    run = cli("sync", str(down), f"s3://{dst}/", "--delete", "--json", "--page-size", "20", "--no-journal",
              "--cluster", bare_cluster.address, env=env, endpoint_url=False)
    _ok(run)
    assert run.summary["deleted"] == 1, run.summary
    assert bucket_tree(s3, dst) == objects


def test_the_plan_holds_the_resolved_settings_and_no_secret(s3, bucket, endpoint, tmp_path, monkeypatch):
    """What the driver sends to every task: the endpoint, region, proxy it resolved from its
    environment; never the secret key, the session token, the key id or a proxy's password."""
    from s3bulk.engine.job import Job
    from s3bulk.engine.planner import build_plan

    secret, token, key_id, password = ("s3bulk-secret-key-x1", "s3bulk-session-token-x2", "AKIAS3BULKPLANX3",
                                       "s3bulk-proxy-password-x4")
    proxy = f"http://proxyuser:{password}@127.0.0.1:3128"
    for k, v in {"AWS_SECRET_ACCESS_KEY": secret, "AWS_SESSION_TOKEN": token, "AWS_ACCESS_KEY_ID": key_id,
                 "AWS_ENDPOINT_URL": endpoint, "AWS_DEFAULT_REGION": "eu-central-1",
                 "HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "NO_PROXY": "127.0.0.1,localhost",
                 "XDG_CACHE_HOME": str(tmp_path / "cache")}.items():
        monkeypatch.setenv(k, v)
    for k in ("http_proxy", "https_proxy", "no_proxy"):
        monkeypatch.delenv(k, raising=False)
    src = tmp_path / "src"
    write_tree(src, {"a": b"1"})
    plan = asyncio.run(build_plan(Job("copy", str(src), f"s3://{bucket}/p/")))
    settings = plan.dst.s3.settled
    assert settings is not None
    assert settings.endpoint_url == endpoint and settings.region == "eu-central-1"
    assert dict(settings.proxies) == {"http": "http://127.0.0.1:3128", "https": "http://127.0.0.1:3128"}
    assert settings.no_proxy == "127.0.0.1,localhost"
    sent = pickle.dumps(plan)
    for word in (secret, token, key_id, password):
        assert word.encode() not in sent, word


def test_an_sse_c_key_is_never_sent_to_a_cluster(cli, s3, bucket, tmp_path, bare_cluster):
    """An SSE-C key is a secret, and the plan is what every task gets: a run that would need one on
    the cluster's machines is refused up front, in one line that does not print it."""
    key = "k" * 32
    write_tree(tmp_path / "src", {"a": b"1"})
    run = cli("copy", str(tmp_path / "src"), f"s3://{bucket}/", "--sse-c", "AES256", "--sse-c-key", key,
              "--no-journal", "--cluster", bare_cluster.address)
    assert run.code == 2, run
    lines = run.err.strip().splitlines()
    assert len(lines) == 1 and "SSE-C" in lines[0] and key not in run.err, run.err
    assert s3.list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0


def test_a_worker_that_cannot_reach_the_endpoint_ends_the_run_in_one_line(cli, s3, bucket, tmp_path, bare_cluster,
                                                                         make_fault_proxy, endpoint):
    """A third worker that resolves `localhost` elsewhere (its own /etc/hosts, in a private mount
    namespace) cannot reach http://localhost:PORT, which the driver and the two other workers reach:
    the run stops before copying anything, in one line naming that worker and the endpoint."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) for a private mount namespace")
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("cannot make a mount namespace here")
    port = make_fault_proxy(endpoint).port  # in front of LocalStack, listening on 127.0.0.1 only
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.2 localhost\n")  # where nothing listens on that port
    put_tree(s3, bucket, {"a": b"1"})
    island = bare_cluster.worker("island", prefix=[
        "unshare", "-m", "--propagation", "private", "sh", "-c",
        f'mount --bind "{hosts}" /etc/hosts && exec "$0" "$@"'])
    try:
        wait_for("the island worker", lambda: "island" in bare_cluster.names())
        island_addr = bare_cluster.address_of("island")
        dst = tmp_path / "dst"
        run = cli("copy", f"s3://{bucket}/", str(dst), "--cluster", bare_cluster.address, "--no-journal",
                  "--retries", "1", env={"AWS_ENDPOINT_URL": f"http://localhost:{port}"}, endpoint_url=False)
        assert run.code == 3, run
        lines = run.err.strip().splitlines()
        assert len(lines) == 1, run.err
        assert island_addr in lines[0] and f"http://localhost:{port}" in lines[0], lines[0]
        assert not (dst / "a").exists()
    finally:
        island.send_signal(signal.SIGKILL)
        island.wait(30)
        wait_for("the island worker to leave", lambda: "island" not in bare_cluster.names())


def test_an_endpoint_gone_mid_run_ends_a_local_cluster_run_in_one_line(s3, bucket, tmp_path, make_fault_proxy,
                                                                     endpoint):
    """`--cluster local:1`: the driver's checks pass, objects land, then the endpoint goes away (the
    proxy in front of LocalStack stops listening). The run ends with one line naming the Dask
    worker and the endpoint, not a failure per object, and a non-zero exit."""
    objects = {f"k{i:04d}": os.urandom(200) for i in range(300)}
    src = tmp_path / "src"
    write_tree(src, objects)
    proxy = make_fault_proxy(endpoint)
    proc = subprocess.Popen([sys.executable, "-m", "s3bulk", "copy", str(src), f"s3://{bucket}/", "--json",
                             "--endpoint-url", proxy.url, "--page-size", "10", "--max-rps", "40",
                             "--retries", "1", "--no-journal", "--cluster", "local:1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        def some_landed() -> bool:
            assert proc.poll() is None, proc.communicate()
            return s3.list_objects_v2(Bucket=bucket, MaxKeys=1).get("KeyCount", 0) > 0

        wait_for("some objects to land", some_landed)
        proxy.stop()
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 3, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Dask worker" in lines[0] and proxy.url in lines[0] and "Traceback" not in err, lines[0]
    summary = [json.loads(x) for x in out.splitlines() if '"summary"' in x][-1]
    assert summary["failed"] == 0, summary  # the objects not copied are not attempted, not failed one by one
