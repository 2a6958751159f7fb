"""--cluster: the run's units as Dask tasks (cluster/driver.py), against LocalStack.

A LocalCluster (`--cluster local:2`) and a real `dask scheduler` with `dask worker` processes over
loopback: copies and syncs come out byte-identical to runs without a cluster; a Dask worker
SIGKILLed mid-run and a driver SIGKILLed mid-run (then `--resume`) lose nothing; a worker that does
not share the local destination is refused up front; without distributed, one line says how to
install it. Every wait is on a condition with a generous deadline, never on a clock."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, bucket_tree, child_pids, put_tree, read_tree, write_tree
from daskprocs import DaskProcs
from daskprocs import wait_for as _wait_for

distributed = pytest.importorskip("distributed")


def _tree(n: int) -> dict[str, bytes]:
    """Keys in a few directories (several pages at --page-size 50), a non-ASCII one, varied sizes."""
    objects = {f"d{i % 4}/obj-{i:05d}.bin": os.urandom(100 + (i * 37) % 3000) for i in range(n)}
    objects["ünï/çødé.txt"] = "unicode ✓".encode()
    return objects


@pytest.fixture(scope="module")
def dask_procs(tmp_path_factory, aws_env):
    procs = DaskProcs(tmp_path_factory.mktemp("dask"))
    try:
        procs.worker("w1")
        procs.worker("w2")
        _wait_for("two workers", lambda: {"w1", "w2"} <= procs.names())
        yield procs
    finally:
        procs.close()


def _copy_ok(run) -> None:
    assert run.code == 0, run
    assert "Traceback" not in run.err, run.err


def test_cluster_option_without_distributed_is_one_line(cli, bucket, tmp_path):
    """Without the extra: one line saying how to install it, exit 2, no traceback."""
    code = ("import sys; sys.modules['distributed'] = None; sys.argv[0] = 's3bulk'; "
            "from s3bulk.cli import main; main()")
    proc = subprocess.run([sys.executable, "-c", code, "copy", str(tmp_path), f"s3://{bucket}/x",
                           "--cluster", "local:2"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2, proc
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 's3bulk[dask]'" in lines[0], proc.stderr


def test_local_cluster_copies_both_ways_like_a_run_without(cli, s3, make_bucket, tmp_path):
    """local -> S3 and S3 -> local with --cluster local:2 give the same bytes as the built-in pool."""
    objects = _tree(240)
    src = tmp_path / "src"
    write_tree(src, objects)
    plain, clustered = make_bucket(), make_bucket()
    _copy_ok(cli("copy", str(src), f"s3://{plain}/p/", "-q", "--page-size", "50", "--no-journal"))
    run = cli("copy", str(src), f"s3://{clustered}/p/", "--json", "--page-size", "50", "--cluster", "local:2")
    _copy_ok(run)
    assert run.summary["copied"] == len(objects), run.summary
    assert bucket_tree(s3, clustered, "p/") == bucket_tree(s3, plain, "p/") == objects

    down = tmp_path / "down"
    run = cli("copy", f"s3://{clustered}/p/", str(down), "--json", "--page-size", "50", "--cluster", "local:2")
    _copy_ok(run)
    assert run.summary["copied"] == len(objects), run.summary
    assert read_tree(down) == objects  # no probe or temporary file left either


def test_sync_delete_on_a_scheduler_with_two_workers(cli, s3, bucket, tmp_path, dask_procs):
    """sync --delete through a real scheduler: DST ends as SRC, extra keys gone, equal ones skipped."""
    objects = _tree(160)
    put_tree(s3, bucket, objects)
    dst = tmp_path / "dst"
    write_tree(dst, {"d0/obj-00000.bin": objects["d0/obj-00000.bin"], "stale/old.txt": b"gone",
                     "d1/obj-00001.bin": b"different"})
    run = cli("sync", f"s3://{bucket}/", str(dst), "--delete", "--json", "--page-size", "50",
              "--cluster", dask_procs.address)
    _copy_ok(run)
    assert read_tree(dst) == objects
    assert run.summary["deleted"] == 1 and run.summary["skipped"] == 1, run.summary
    assert run.summary["copied"] == len(objects) - 1, run.summary
    again = cli("sync", f"s3://{bucket}/", str(dst), "--delete", "--json", "--page-size", "50",
                "--cluster", dask_procs.address)
    _copy_ok(again)
    assert again.summary["copied"] == 0 and again.summary["skipped"] == len(objects), again.summary


def test_list_get_server_chain_on_a_scheduler(cli, tmp_path, listget_server, dask_procs):
    """A token-paged source (`s3bulk serve`) is listed by the driver, page after page, while the
    tasks copy the pages: every file arrives whole, none twice, the journal goes with the run."""
    url = listget_server("--synthetic", "400", "--size", "64", "--page-size", "20", "--processes", "1")
    dst = tmp_path / "dst"
    run = cli("copy", url + "/", str(dst), "--json", "--page-size", "20", "--cluster", dask_procs.address)
    _copy_ok(run)
    files = sorted(os.listdir(dst))
    assert len(files) == 400 and run.summary["copied"] == 400 and run.summary["listed"] == 400, run.summary
    for name in files:
        body = (dst / name).read_bytes()
        assert len(body) == 64 and body.startswith(name.encode() + b"\n"), name
    assert run.summary["journal"] is None


def _popen_copy(args: list[str], tmp_path: Path, state: Path, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "s3bulk", "copy", *args, "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            start_new_session=True, env=dict(os.environ, XDG_STATE_HOME=str(state), **(env or {})))


def _copied_every_object(returncode: int, out: str, err: str, s3, bucket: str, objects: dict[str, bytes]) -> None:
    """A run that lost a worker ended well: exit 0, every object counted copied once, the bucket as the tree."""
    assert returncode == 0, err
    summary = [json.loads(x) for x in out.splitlines() if '"summary"' in x][-1]
    assert summary["copied"] == len(objects), summary
    assert bucket_tree(s3, bucket) == objects


def test_worker_killed_mid_run_loses_nothing(cli, s3, bucket, tmp_path, endpoint, dask_procs):
    """A third worker is SIGKILLed while it runs a task and after objects landed: Dask runs its task
    again elsewhere; every object arrives, whole, and is counted once."""
    objects = _tree(400)
    src = tmp_path / "src"
    write_tree(src, objects)
    victim = dask_procs.worker("victim")
    _wait_for("the victim worker", lambda: dask_procs.address_of("victim") is not None)
    victim_addr = dask_procs.address_of("victim")
    # --max-rps keeps the run going long enough to kill a worker in the middle of it
    proc = _popen_copy([str(src), f"s3://{bucket}/", "--endpoint-url", endpoint, "--page-size", "25",
                        "--max-rps", "100", "--cluster", dask_procs.address, "--no-journal"],
                       tmp_path, tmp_path / "state")
    try:
        def victim_busy_after_some_landed() -> bool:
            assert proc.poll() is None, proc.communicate()
            landed = s3.list_objects_v2(Bucket=bucket, MaxKeys=1).get("KeyCount", 0)
            return landed > 0 and bool(dask_procs.client.processing().get(victim_addr))

        _wait_for("the victim to run a task after some objects landed", victim_busy_after_some_landed)
        victim.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    _copied_every_object(proc.returncode, out, err, s3, bucket, objects)


def test_driver_killed_mid_run_resumes_from_its_journal(cli, s3, bucket, tmp_path, endpoint, dask_procs):
    """The driver SIGKILLed once units were done: `--resume` on the cluster finishes the copy, and
    DST is the same as a copy that was never interrupted."""
    objects = _tree(400)
    put_tree(s3, bucket, objects)
    dst = tmp_path / "dst"
    state = tmp_path / "state"
    args = [f"s3://{bucket}/", str(dst), "--endpoint-url", endpoint, "--page-size", "25",
            "--max-rps", "100", "--cluster", dask_procs.address]
    proc = _popen_copy(args, tmp_path, state)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            event = json.loads(line)
            if event["event"] == "progress" and event["copied"] > 0:
                break
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert len(read_tree(dst)) < len(objects), "the driver was killed midway"
    _wait_for("the killed driver's tasks to end", dask_procs.idle)
    run = cli("copy", *args, "--json", "--resume", env={"XDG_STATE_HOME": str(state)})
    _copy_ok(run)
    _wait_for("the cluster to be idle", dask_procs.idle)
    assert read_tree(dst) == objects


def test_worker_without_the_shared_destination_is_refused(cli, s3, bucket, tmp_path, dask_procs):
    """A worker that sees another filesystem at DST (its own tmpfs over DST's parent, in its own
    mount namespace) makes the run refuse up front, in one line, before copying anything."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) for a private mount namespace")
    private = tmp_path / "island"
    private.mkdir()
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("cannot make a mount namespace here")
    put_tree(s3, bucket, {"a": b"1"})
    island = dask_procs.worker("island", prefix=[
        "unshare", "-m", "--propagation", "private", "sh", "-c",
        f'mount -t tmpfs none "{private}" && exec "$0" "$@"'])
    try:
        _wait_for("the island worker", lambda: "island" in dask_procs.names())
        dst = private / "dst"
        run = cli("copy", f"s3://{bucket}/", str(dst), "--cluster", dask_procs.address, "--no-journal")
        assert run.code == 2, run
        lines = run.err.strip().splitlines()
        assert len(lines) == 1 and "filesystem every worker shares" in lines[0], run.err
        assert not (dst / "a").exists()
    finally:
        island.send_signal(signal.SIGKILL)
        island.wait(30)
        _wait_for("the island worker to leave", lambda: "island" not in dask_procs.names())


def test_api_takes_a_client_and_leaves_it_open(s3, bucket, tmp_path, endpoint, dask_procs):
    """s3bulk.copy(..., cluster=Client): the same result as the command line; the caller's client
    is still usable afterwards."""
    import s3bulk
    from s3bulk.engine.plan import TransferOptions
    from s3bulk.config.urls import S3Options

    objects = _tree(120)
    put_tree(s3, bucket, objects)
    dst = tmp_path / "api"
    summary = s3bulk.copy(f"s3://{bucket}/", str(dst), src_s3=S3Options(endpoint_url=endpoint),
                          options=TransferOptions(page_size=40), cluster=dask_procs.client)
    assert summary.ok and summary.counters.done == len(objects), summary
    assert summary.workers == len(dask_procs.names())  # the cluster's task slots
    assert read_tree(dst) == objects
    assert dask_procs.client.submit(sum, [1, 2]).result(timeout=60) == 3


def test_a_task_thread_keeps_the_runs_stores_open_between_tasks(tmp_path):
    """run_units, as a Dask worker thread runs it task after task: the second task of a run reuses
    the stores (clients, connections) the first opened, and the result is the same; a task of
    another run closes them and opens its own."""
    import asyncio

    from s3bulk.cluster import driver as cluster
    from s3bulk.engine.messages import UnitDone
    from s3bulk.engine.plan import TransferOptions
    from s3bulk.engine.job import Job
    from s3bulk.engine.planner import build_plan
    from s3bulk.model import WorkUnit

    src, dst = tmp_path / "src", tmp_path / "dst"
    objects = {f"k{i:03d}": os.urandom(50) for i in range(30)}
    write_tree(src, objects)
    plan = asyncio.run(build_plan(Job("copy", str(src), str(dst), options=TransferOptions(workers=1, page_size=10))))

    def task(unit: WorkUnit, run_id: str) -> list:
        messages, _ = cluster.run_units(plan, [unit], 1 << 20, None, run_id)
        return messages

    first = task(WorkUnit(until="k009"), "run-a")
    here = cluster._task_thread()
    kept = dict(here.stores)
    assert set(kept) == {"src", "dst"}
    second = task(WorkUnit(after="k009"), "run-a")
    assert all(here.stores[k] is kept[k] for k in kept)  # the same objects: nothing opened again
    assert any(isinstance(m, UnitDone) for m in first) and any(isinstance(m, UnitDone) for m in second)
    assert read_tree(dst) == {k: v for k, v in objects.items() if k <= "k009"} | {
        k: v for k, v in objects.items() if "k009" < k <= "k019"}
    task(WorkUnit(after="k019"), "run-b")
    assert all(here.stores[k] is not kept[k] for k in kept)  # another run: its own stores
    assert read_tree(dst) == objects


def _quiet_state(dask_worker) -> dict:
    """On a Dask worker: which of its periodic callbacks run, and how often (ms)."""
    import dask

    pcs = dask_worker.periodic_callbacks
    return {"profiling": "profile" in pcs, "profile_config": dask.config.get("distributed.worker.profile.enabled"),
            "tick_ms": pcs["tick"].callback_time,
            "memory_monitor_ms": pcs["memory_monitor"].callback_time if "memory_monitor" in pcs else None}


@pytest.mark.parametrize("beside_a_thread", [False, True], ids=["forked", "nannies"])
def test_a_local_cluster_runs_without_dasks_idle_background(beside_a_thread):
    """`--cluster local:N` (Cluster.connect("local:N")): its workers do not run Dask's statistical
    profiler (it samples every thread every 10 ms) and check their event loop and memory once a
    second, not every 20 and 100 ms: CPU a long run from a slow server would pay every second. The
    caller's own Dask config is left as it was. Both ways of starting it: workers forked from a
    process with one thread (no nannies), and Dask's nannies where other threads run (the API
    inside a threaded program: forking it would be unsafe)."""
    import threading

    import dask

    from s3bulk.cluster.driver import Cluster

    alone = threading.active_count() == 1
    before = dask.config.get("distributed.worker.profile.enabled")
    release = threading.Event()
    other = threading.Thread(target=release.wait, daemon=True)
    if beside_a_thread:
        other.start()
    try:
        c = Cluster.connect("local:1")
        try:
            state = list(c.client.run(_quiet_state).values())
            nannies = [w.get("nanny") for w in c.client.scheduler_info()["workers"].values()]
            assert c.client.submit(sum, [1, 2]).result(timeout=60) == 3
        finally:
            c.close()
    finally:
        release.set()
    assert state == [{"profiling": False, "profile_config": False, "tick_ms": 1000, "memory_monitor_ms": 1000}]
    if beside_a_thread:
        assert nannies[0], "a nanny starts the worker where this process runs other threads"
    elif alone:
        assert nannies == [None], "a worker forked from this process, no nanny"
    assert dask.config.get("distributed.worker.profile.enabled") == before
    assert dask.config.get("distributed.worker.multiprocessing-method") == "spawn"


def _env_of_worker(name: str) -> str | None:
    return os.environ.get(name)


def test_a_second_local_cluster_sees_the_environment_of_today(monkeypatch):
    """A second `--cluster local:N` in one process (the API called twice) gives its workers the
    environment as it is now (credentials and endpoints come from there): workers forked from
    this process copy it; where nannies start them (beside other threads), from a forkserver
    that lives as long as the process, they are handed it."""
    from s3bulk.cluster.driver import Cluster

    c = Cluster.connect("local:1")
    c.close()
    monkeypatch.setenv("S3BULK_TEST_SECOND_CLUSTER", "now")
    c = Cluster.connect("local:1")
    try:
        seen = list(c.client.run(_env_of_worker, "S3BULK_TEST_SECOND_CLUSTER").values())
    finally:
        c.close()
    assert seen == ["now"]


def test_a_quiet_local_cluster_run_prints_nothing_when_port_8787_is_taken(cli, tmp_path):
    """`-q` with `--cluster local:1` prints nothing, even where Dask's usual port 8787 is taken (a
    notebook's own cluster, its dashboard): Dask warned about the port on stderr."""
    import socket

    taken = socket.socket()
    try:
        taken.bind(("127.0.0.1", 8787))
        taken.listen()
    except OSError:
        pass  # already taken by something else: the case itself
    scratch = tmp_path / "tmp"  # the workers' Dask work directories go under TMPDIR, and go
    scratch.mkdir()
    try:
        objects = {"a.txt": b"hello", "d/b.bin": os.urandom(300)}
        write_tree(tmp_path / "src", objects)
        run = cli("copy", str(tmp_path / "src"), str(tmp_path / "dst"), "-q", "--no-journal", "--cluster", "local:1",
                  env={"TMPDIR": str(scratch)})
    finally:
        taken.close()
    assert run.code == 0 and run.err == "", run.err
    assert read_tree(tmp_path / "dst") == objects
    assert not [p.name for p in scratch.iterdir() if p.name.startswith("s3bulk-dask-")]


def _gone(pid: int) -> bool:
    """The process has exited (a zombie nobody reaped yet counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def test_a_local_clusters_worker_killed_mid_run_loses_nothing(s3, bucket, tmp_path, endpoint):
    """`--cluster local:2` forks its workers without nannies: one SIGKILLed once objects landed is
    not restarted, its task runs again on the other worker, and every object arrives, whole."""
    objects = _tree(400)
    src = tmp_path / "src"
    write_tree(src, objects)
    proc = _popen_copy([str(src), f"s3://{bucket}/", "--endpoint-url", endpoint, "--page-size", "25",
                        "--max-rps", "100", "--cluster", "local:2", "--no-journal"], tmp_path, tmp_path / "state")
    try:
        def two_workers_and_some_landed() -> bool:
            assert proc.poll() is None, proc.communicate()
            landed = s3.list_objects_v2(Bucket=bucket, MaxKeys=1).get("KeyCount", 0)
            return landed > 0 and len(child_pids(proc.pid)) == 2

        _wait_for("both workers running after some objects landed", two_workers_and_some_landed)
        victim = min(child_pids(proc.pid))
        os.kill(victim, signal.SIGKILL)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    _copied_every_object(proc.returncode, out, err, s3, bucket, objects)


def test_a_local_clusters_workers_die_with_their_driver_and_resume_finishes(cli, s3, bucket, tmp_path, endpoint):
    """The driver of `--cluster local:2` SIGKILLed mid-run: its forked workers do not outlive it
    (nothing keeps copying, nothing is left running), `--resume` finishes the copy, and the
    killed run's Dask work directory is gone after it."""
    objects = _tree(400)
    put_tree(s3, bucket, objects)
    dst = tmp_path / "dst"
    state = tmp_path / "state"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    args = [f"s3://{bucket}/", str(dst), "--endpoint-url", endpoint, "--page-size", "25",
            "--max-rps", "100", "--cluster", "local:2"]
    proc = _popen_copy(args, tmp_path, state, env={"TMPDIR": str(scratch)})
    workers: set[int] = set()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            workers |= child_pids(proc.pid)
            event = json.loads(line)
            if event["event"] == "progress" and event["copied"] > 0 and len(workers) == 2:
                break
        os.kill(proc.pid, signal.SIGKILL)  # the driver alone: its workers must follow it
        proc.wait(60)
        assert len(workers) == 2
        _wait_for("the workers to end with their driver", lambda: all(_gone(pid) for pid in workers))
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever of its session is left, if the test failed
        except ProcessLookupError:
            pass
    assert len(read_tree(dst)) < len(objects), "the driver was killed midway"
    assert [p.name for p in scratch.iterdir() if p.name.startswith("s3bulk-dask-")], "the killed run left one"
    run = cli("copy", *args, "--json", "--resume", env={"XDG_STATE_HOME": str(state), "TMPDIR": str(scratch)})
    _copy_ok(run)
    assert read_tree(dst) == objects
    assert not [p.name for p in scratch.iterdir() if p.name.startswith("s3bulk-dask-")]
