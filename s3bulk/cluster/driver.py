"""Run a plan's work units as tasks on a Dask distributed cluster (`--cluster`).

Why Dask and not a cluster of our own: it is pip-installable, reschedules the tasks of a worker
that dies, runs in-process for tests (LocalCluster), and people already run it (dask ssh,
dask-kubernetes, dask-jobqueue). s3bulk's key-range unit is already the task.

How it fits the coordinator (engine/run/coordinator.py): the cluster is one more kind of worker handle. The
coordinator keeps its frontier, its journal, its progress display and its `handle(msg)` exactly as
for worker processes; the handle's thread takes units from the coordinator's queue, submits them in
small batches as tasks (`run_units`), and puts every message a finished task returns into the
coordinator's event queue. Inside a Dask worker a task runs the same Worker class as a worker
process (its event loop, bounded transfers, retries, AIMD) over plain in-process queues holding the
batch, and returns what it would have sent: what each unit listed (the pieces still to list), the
units done, the uploads it opened and closed, and its counters and failures added up.

At most `2 x task slots` tasks are in flight (one running and one waiting per Dask worker thread),
each with at most `pages_ahead` units, and the coordinator's own bound on units holds as before.

A task reports only when it ends, so the rest of a unit it listed reaches the coordinator late. S3
and local sources split the key space into many units, which hides that; a list/get server pages
by token in one chain, so for it the driver lists each page itself (_ChainLister), hands the rest
on at once, and the task copies the page (listing it again by the same token).

Worker loss: Dask runs the lost worker's tasks again elsewhere; a task's messages come back only
from the run that finished, and copying a key again is safe (atomic local writes, whole-object
PUTs, multipart parts sent again), so nothing is lost or counted twice. A driver that dies leaves a
journal with the units whose every object was copied: `--resume` does the rest.

Settings travel, credentials do not: the plan holds each S3 side's settings as the driver resolved
them (S3Settings: endpoint, region, addressing style, CA bundle path, proxies without their
passwords, --no-sign-request), and every task uses exactly those, never its own environment's: a
worker started without AWS_ENDPOINT_URL, or with credentials for AWS, still reads and writes where
the driver checked. No secret is in the plan: every Dask worker resolves its own credentials
(environment, profile, instance role). Before any task runs, each worker makes one request to each
endpoint (prepare: _warm); one that cannot reach it ends the run in one line naming the worker
and the endpoint, and so does a task whose requests stop connecting mid-run (run_units).
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
import uuid
from dataclasses import replace
from typing import Any, Iterator

from ..errors import S3BulkError, StoreError, UsageError
from ..model import Counters, WorkUnit
from ..engine.messages import Abandoned, Exited, Fatal, Listed, ProgressReport, UnitDone, WorkerMessage
from ..engine.plan import Plan

INSTALL_HINT = "--cluster needs Dask distributed: pip install 's3bulk[dask]'"
CONNECT_TIMEOUT = 30.0  # seconds to reach a scheduler
# Dask settings for a cluster s3bulk starts itself (`--cluster local:N`): Dask's periodic work that
# s3bulk does not use, which otherwise costs CPU every second whether tasks run or not (measured
# idle with 2 workers, bench/cluster_idle_bench.py: 125 ms of CPU per second across the driver and
# workers with Dask's defaults, 13 ms/s with these). The statistical profiler samples every
# thread's stack every 10 ms; the event-loop tick check runs every 20 ms in every Dask server (the
# scheduler, each nanny, each worker); the memory monitors poll every 100 ms (s3bulk bounds its own
# memory; pausing or spilling has nothing to act on: tasks hold no data); the system monitor feeds a
# dashboard s3bulk does not start. Applied while the LocalCluster is made: the scheduler and the
# nannies (in this process) read them then, and each nanny hands its config to its worker process.
# The same keys belong in the config of a cluster of your own (docs/guides/cluster.md, "A cluster of your own").
QUIET_SETTINGS: dict[str, Any] = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.tick.cycle": "10s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.admin.system-monitor.interval": "10s",
    "distributed.admin.system-monitor.disk": False,
    "distributed.admin.system-monitor.gil.enabled": False,
}


class _QuietLogs:
    """Keeps Dask's log lines below ERROR out of this process's output from now until `close`
    (the last thing a Cluster closes). LocalCluster's silence_logs ends when its close returns,
    but the scheduler's close still logs the workers' connections it finds closed (at INFO, with
    a traceback) when they leave first: seen in `-q` output."""

    def __init__(self) -> None:
        import logging

        self.logger = logging.getLogger("distributed")
        self.level = self.logger.level
        self.logger.setLevel(max(logging.ERROR, self.logger.getEffectiveLevel()))

    def close(self) -> None:
        self.logger.setLevel(self.level)


def import_distributed() -> Any:
    """The distributed module, or one UsageError line saying how to install it. Importing it is
    the largest part of what Dask adds to a run that starts its own cluster (~0.25 CPU s of
    ~0.4), so it is imported the cheap way (_cheap_import)."""
    try:
        with _cheap_import():
            import distributed
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    return distributed


@contextlib.contextmanager
def _cheap_import() -> Iterator[None]:
    """While distributed is imported: no garbage collection (the import makes tens of thousands
    of objects that all live on, and the collections they trigger walk everything imported
    before), and dask's and distributed's YAML defaults parsed by libyaml where PyYAML has it (the
    same safe loader in C: 21 -> 3 ms for the two files). Together ~40 ms of the import's ~300
    here (medians of 8 runs each)."""
    import gc
    import importlib

    yaml: Any = None
    try:
        yaml = importlib.import_module("yaml")  # dask's dependency (no type stubs here)
    except ImportError:
        pass
    safe_load = getattr(yaml, "safe_load", None)
    fast = getattr(yaml, "CSafeLoader", None)
    was_enabled = gc.isenabled()
    gc.disable()
    if yaml is not None and safe_load is not None and fast is not None:
        yaml.safe_load = lambda stream: yaml.load(stream, Loader=fast)
    try:
        yield
    finally:
        if yaml is not None and safe_load is not None:
            yaml.safe_load = safe_load
        if was_enabled:
            gc.enable()


class Cluster:
    """A connection to a Dask cluster for one run: the Client, and the LocalCluster when we
    started one (closed with the run); a Client the caller passed in is left open."""

    def __init__(self, client: Any, owned: list[Any], local: bool = False) -> None:
        self.client = client
        self._owned = owned
        self.local = local  # its workers are processes of this machine that s3bulk started (local:N)

    @classmethod
    def connect(cls, spec: Any, plan: Plan | None = None) -> "Cluster":
        """`spec`: a distributed.Client, "local" / "local:N" (a LocalCluster of N worker processes,
        one thread each; N defaults to the cores), or a scheduler address (tcp://host:8786).
        `plan`: the run's, when known: workers forked for `local:N` start with its stores'
        modules imported."""
        distributed = import_distributed()
        if isinstance(spec, distributed.Client):
            return cls(spec, [])
        if not isinstance(spec, str) or not spec.strip():
            raise UsageError(f"invalid --cluster {spec!r}: expected local[:N] or a scheduler address "
                             "such as tcp://host:8786")
        spec = spec.strip()
        if spec == "local" or spec.startswith("local:"):
            n_text = spec[6:] or str(os.cpu_count() or 1)
            if not n_text.isdigit() or int(n_text) < 1:
                raise UsageError(f"invalid --cluster {spec!r}: local:N needs N >= 1 worker processes")
            return cls._local(distributed, int(n_text), plan)
        if "://" not in spec and ":" not in spec:
            raise UsageError(f"invalid --cluster {spec!r}: expected local[:N] or a scheduler address "
                             "such as tcp://host:8786")
        try:
            client = distributed.Client(spec, timeout=CONNECT_TIMEOUT, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise S3BulkError(f"cannot reach the Dask scheduler at {spec}: {exc}") from None
        return cls(client, [client])

    @classmethod
    def _local(cls, distributed: Any, n: int, plan: Plan | None = None) -> "Cluster":
        import logging
        import signal

        import dask

        # worker processes inherit a blocked SIGINT: a Ctrl-C is the coordinator's to interpret
        # (graceful stop), as for its own worker processes
        masked = threading.current_thread() is threading.main_thread()
        if masked:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            if forked_ok():
                return cls._forked(distributed, n, plan)
            with dask.config.set(local_settings()):  # the nannies hand this config to their workers
                _preload_forkserver()
                # env: the forkserver's environment is this process's when it started (the first
                # LocalCluster here); a worker forked from it gets today's too (credentials,
                # endpoints, proxies set since), as a spawned one would. Only over local pipes.
                # scheduler_kwargs: no dashboard, but the scheduler serves its HTTP routes (health,
                # metrics) anyway, by default on port 8787: where that is taken (a notebook's own
                # cluster) Dask printed a warning into our output. A free loopback port instead.
                lc = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                              dashboard_address=None, silence_logs=logging.ERROR,
                                              env=dict(os.environ),
                                              scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
            client = distributed.Client(lc, set_as_default=False)
        except OSError as exc:
            raise S3BulkError(f"cannot start a local Dask cluster: {exc}") from None
        finally:
            if masked:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        return cls(client, [client, lc, _QuietLogs()], local=True)

    @classmethod
    def _forked(cls, distributed: Any, n: int, plan: Plan | None) -> "Cluster":
        """A scheduler here and N worker processes forked from this process, no nannies
        (local_workers.py). Called with SIGINT blocked, which the workers inherit."""
        import logging

        import dask

        from .local_workers import ForkedWorkers

        workers = ForkedWorkers(n, dict(QUIET_SETTINGS), worker_preload(plan))
        owned: list[Any] = [workers, _QuietLogs()]
        try:
            with dask.config.set(QUIET_SETTINGS):  # the scheduler and the client read them as they start
                lc = distributed.LocalCluster(n_workers=0, threads_per_worker=1, processes=True,
                                              dashboard_address=None, silence_logs=logging.ERROR,
                                              scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
                owned.insert(0, lc)  # closed before the workers are waited for: its close ends them
                workers.serve(lc.scheduler_address)
                client = distributed.Client(lc, set_as_default=False)
                owned.insert(0, client)
            client.wait_for_workers(n, timeout=CONNECT_TIMEOUT)
        except BaseException as exc:
            for thing in owned:
                try:
                    thing.close()
                except Exception:
                    pass
            if isinstance(exc, (OSError, TimeoutError)):
                raise S3BulkError(f"cannot start a local Dask cluster: {exc}") from None
            raise
        return cls(client, owned, local=True)

    def slots(self) -> int:
        """Tasks that can run at once: the sum of the workers' threads (waits for one worker)."""
        try:
            self.client.wait_for_workers(1, timeout=CONNECT_TIMEOUT)
        except (TimeoutError, OSError):
            raise S3BulkError(f"no Dask worker joined the cluster within {CONNECT_TIMEOUT:.0f} s") from None
        info = self.client.scheduler_info(n_workers=-1) if _takes_n_workers(self.client) \
            else self.client.scheduler_info()
        return max(1, sum(w.get("nthreads", 1) for w in info.get("workers", {}).values()))

    def usage(self) -> dict[str, tuple[float, int]]:
        """(CPU seconds so far, peak RSS bytes) of each worker process, by address (those that
        answer within a few seconds: this must not hang a run that is ending)."""
        out: dict[str, tuple[float, int]] = {}

        def ask() -> None:
            try:
                out.update(self.client.run(_process_usage, on_error="ignore"))
            except Exception:
                pass

        t = threading.Thread(target=ask, daemon=True)
        t.start()
        t.join(5.0)
        return dict(out)

    def close(self) -> None:
        for thing in self._owned:
            try:
                thing.close()
            except Exception:
                pass


# Modules a LocalCluster's forkserver imports once for all its worker processes: distributed, and
# the engine a task runs (the `s3bulk` console script's main module, s3bulk.cli, is imported again
# in every child as multiprocessing's __mp_main__, so it comes free too).
FORKSERVER_PRELOAD = ["distributed", "s3bulk.cli", "s3bulk.engine.run.worker", "s3bulk.engine.transfer.one_object",
                      "s3bulk.stores.s3.store", "s3bulk.stores.local.store", "s3bulk.stores.listget"]


def worker_preload(plan: Plan | None) -> list[str]:
    """What a forked worker runs (local_workers.py), imported once by the driver before it forks
    them: the engine, and the plan's stores (every kind when the plan is not known)."""
    from ..stores import STORE_MODULES

    kinds = {plan.src.kind, plan.dst.kind} if plan is not None else {"s3", "local", "http"}
    return ["s3bulk.engine.run.worker", "s3bulk.engine.transfer.one_object",
            *(STORE_MODULES[k] for k in sorted(kinds) if k in STORE_MODULES)]


def forked_ok() -> bool:
    """Whether `local:N` forks its workers from this process (local_workers.can_fork)."""
    from .local_workers import can_fork

    return can_fork()


def local_settings() -> dict[str, Any]:
    """QUIET_SETTINGS, and worker processes started from a forkserver that has imported
    distributed and the engine once, not by spawn, where every worker imports them itself (~0.5 CPU
    s each for distributed alone; measured with 2 workers: starting the cluster 1.5-1.7 -> 1.1 CPU
    s, bench/cluster_idle_bench.py). Not fork: the driver runs threads (the cluster's event loop).
    Where there is no forkserver (Windows), Dask's spawn stays. The forkserver lives as long as
    this process (the API's next cluster reuses it); it is started inside Cluster._local's blocked
    SIGINT, so its workers inherit that as spawned ones did."""
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return dict(QUIET_SETTINGS)
    return {**QUIET_SETTINGS, "distributed.worker.multiprocessing-method": "forkserver"}


def _preload_forkserver() -> None:
    """Have the forkserver import FORKSERVER_PRELOAD (inside dask.config.set(local_settings())).
    distributed sets its own preload list the first time it makes the forkserver context; ours
    replaces it. No effect once this process's forkserver runs (a second cluster in one process
    reuses it as it is)."""
    import dask

    if dask.config.get("distributed.worker.multiprocessing-method") != "forkserver":
        return
    from distributed.utils import get_mp_context

    get_mp_context().set_forkserver_preload(FORKSERVER_PRELOAD)


def _process_usage() -> tuple[float, int]:
    import resource

    from ..engine.run.peak_rss import peak_rss_bytes

    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime, peak_rss_bytes()


def _takes_n_workers(client: Any) -> bool:
    import inspect

    try:
        return "n_workers" in inspect.signature(client.scheduler_info).parameters
    except (TypeError, ValueError):
        return False


class DaskRunner:
    """The engine's Runner (engine/run/handles.py) for `--cluster`: connects (or starts a local
    cluster) in prepare, sizes the plan to the cluster's task slots, and drives the tasks through
    one ClusterHandle."""

    def __init__(self, spec: Any) -> None:
        self.spec = spec
        self.cluster: Cluster | None = None

    def prepare(self, plan: Plan) -> Plan:
        self.cluster = Cluster.connect(self.spec, plan)
        return prepare(self.cluster, plan)

    def start(self, plan: Plan, units_q: Any, events_q: Any, body_bytes: int, resume_info: Any) -> list[Any]:
        if self.cluster is None:
            raise RuntimeError("DaskRunner.start before prepare")
        return [ClusterHandle(self.cluster, plan, units_q, events_q, body_bytes, resume_info)]

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.close()


def runner_for(spec: Any) -> DaskRunner | None:
    """The runner for what `--cluster` / `cluster=` was given (None: none given). Says at once, in
    one line, when distributed is not installed."""
    if spec is None:
        return None
    import_distributed()
    return DaskRunner(spec)


def prepare(cluster: Cluster, plan: Plan) -> Plan:
    """Check the plan can run on this cluster and return it with `workers` set to the cluster's
    task slots, so that --max-rps, --max-bandwidth and --max-buffer are shared out among them
    (stores/resilient.py divides by `workers`)."""
    for loc in (plan.src, plan.dst):
        if loc.kind == "memory":
            raise UsageError(f"{loc.display} lives in one process: it cannot be used with --cluster")
    if plan.sync is not None and plan.sync.dry_run:
        raise UsageError("--dry-run prints from the workers: run it without --cluster (it copies nothing)")
    if not cluster.local and _customer_keys(plan):
        # the plan is all a task gets, and a key is a secret: it never leaves this machine
        raise UsageError("SSE-C keys (--sse-c-key, --sse-c-copy-source-key) are secrets and are not sent to "
                         "the machines of a cluster: run without --cluster, or with --cluster local:N")
    slots = cluster.slots()
    _probe(cluster, plan)
    unreached = {addr: why for addr, why in cluster.client.run(_warm, plan).items() if why}
    if unreached:  # every worker at once, not task by task
        addr, why = sorted(unreached.items())[0]
        more = f" (and {len(unreached) - 1} more)" if len(unreached) > 1 else ""
        raise S3BulkError(f"--cluster: Dask worker {_label(cluster, addr)}{more} {why}")
    return replace(plan, options=replace(plan.options, workers=slots))


def _customer_keys(plan: Plan) -> bool:
    """Whether the plan holds an SSE-C key (to write with, or to read a side with)."""
    sides = [loc.s3.sse_c_key for loc in (plan.src, plan.dst) if loc.kind == "s3"]
    return plan.options.write_props.set.sse_c_key is not None or any(k is not None for k in sides)


def _label(cluster: Cluster, addr: str) -> str:
    """A worker's address, with its name when it has one of its own."""
    try:
        name = cluster.client.scheduler_info()["workers"][addr].get("name")
    except Exception:
        name = None
    return f"{addr} ({name})" if name is not None and str(name) != addr else addr


def endpoint_of(loc: Any) -> str:
    """Where a network side's requests go, for messages: the S3 endpoint the run resolved (or
    AWS's for the region), or the list/get server."""
    if loc.kind == "s3":
        settled = loc.s3.settled
        return settled.describe_endpoint() if settled is not None else (loc.s3.endpoint_url or "AWS S3")
    return str(loc.root)


def _side_of(plan: Plan, exc: StoreError) -> Any:
    """The side of the plan whose request failed with `exc` (by the URL it names)."""
    sides = [loc for loc in (plan.src, plan.dst) if loc.kind in ("s3", "http")] or [plan.src]
    for loc in sides:
        prefix = f"s3://{loc.root}" if loc.kind == "s3" else str(loc.root).rstrip("/")
        if exc.url == prefix or exc.url.startswith(prefix + "/"):
            return loc
    return sides[0]


def _warm(plan: Plan) -> str:
    """In a worker process: open the plan's stores and make one request to each network side
    (HeadBucket; a list/get server's first page). The imports and botocore's parsed S3 model
    (seconds of CPU the first time, cached per process) are then paid by all workers at once up
    front, not by the first tasks one after another; and a worker that cannot reach an endpoint
    says so here, before any task runs: what is wrong, or "" (anything but a failure to connect is
    the tasks' to report, object by object)."""
    import asyncio

    from ..errors import ConnectFailed
    from ..stores import Writer, open_store
    from ..engine.transfer import one_object as transfer  # noqa: F401
    from ..engine.run import worker  # noqa: F401

    problem: list[str] = []
    base = plan.options.store_options()
    options = replace(base, resilience=replace(base.resilience, retries=min(base.resilience.retries, 2)))

    async def touch() -> None:
        for loc in (plan.src, plan.dst):
            store = None
            try:
                store = await open_store(loc, options)
                if loc.kind == "s3" and isinstance(store, Writer):
                    await store.prepare()
                elif loc.kind == "http":
                    await store.list_page(loc.prefix, WorkUnit(), 1)
            except ConnectFailed as exc:
                problem.append(f"cannot reach the endpoint {endpoint_of(loc)} of {loc.display} ({exc})")
                return
            except Exception:
                pass  # the task will say what is wrong
            finally:
                if store is not None:
                    try:
                        await store.close()
                    except Exception:
                        pass

    t = threading.Thread(target=asyncio.run, args=(touch(),))  # client.run calls us on the worker's loop
    t.start()
    t.join()
    return problem[0] if problem else ""


def _probe(cluster: Cluster, plan: Plan) -> None:
    """Local paths must be one shared filesystem: every worker writes a probe file in a local
    DST and then sees every other worker's; a local SRC and a --files-from file must exist on
    every worker."""
    needs: list[str] = []
    if plan.src.kind == "local":
        needs.append(plan.src.root)
    if plan.manifest is not None:
        needs.append(plan.manifest)
    for loc in (plan.src, plan.dst):  # the CA bundle the driver resolved is read on every worker
        settled = loc.s3.settled if loc.kind == "s3" else None
        if settled is not None and settled.ca_bundle and settled.ca_bundle not in needs:
            needs.append(settled.ca_bundle)
    dst_dir = plan.dst.root if plan.dst.kind == "local" else None
    if not needs and dst_dir is None:
        return
    client = cluster.client
    token = uuid.uuid4().hex[:12]
    try:
        first = client.run(_probe_write, needs, dst_dir, token)
        problems = {f"Dask worker {addr}": why for addr, (why, _) in first.items() if why}
        names = [name for why, name in first.values() if name]
        if not problems and dst_dir is not None:
            seen = client.run(_probe_see, dst_dir, names)
            problems = {f"Dask worker {addr}": why for addr, why in seen.items() if why}
            if not problems and os.path.isdir(dst_dir) and _probe_see(dst_dir, names):
                problems = {"the Dask workers": f"write {dst_dir} where this machine does not see it"}
    finally:
        if dst_dir is not None:
            try:
                client.run(_probe_clean, dst_dir, token)
            except Exception:
                pass
    if problems:
        who, why = sorted(problems.items())[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UsageError(f"--cluster: {who}{more} {why}; local paths must be on a "
                         "filesystem every worker shares")


def _probe_write(needs: list[str], dst_dir: str | None, token: str) -> tuple[str, str]:
    """On each worker: (problem or "", name of the probe file written or "")."""
    for path in needs:
        if not os.path.exists(path):
            return f"does not see {path}", ""
    if dst_dir is None:
        return "", ""
    name = f".s3bulk-probe-{token}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        os.makedirs(dst_dir, exist_ok=True)
        with open(os.path.join(dst_dir, name), "wb"):
            pass
    except OSError as exc:
        return f"cannot write in {dst_dir} ({exc.strerror or exc})", ""
    return "", name


def _probe_see(dst_dir: str, names: list[str]) -> str:
    missing = [n for n in names if not os.path.exists(os.path.join(dst_dir, n))]
    return f"does not see what other workers wrote in {dst_dir}" if missing else ""


def _probe_clean(dst_dir: str, token: str) -> None:
    try:
        for name in os.listdir(dst_dir):
            if name.startswith(f".s3bulk-probe-{token}-"):
                try:
                    os.unlink(os.path.join(dst_dir, name))
                except OSError:
                    pass
    except OSError:
        pass


class _Collector:
    """The Worker's event queue inside a task: keeps its messages in order, with the periodic
    progress reports added into one."""

    def __init__(self) -> None:
        self.messages: list[WorkerMessage] = []
        self.counters = Counters()
        self.failures: list[Any] = []

    def put(self, msg: WorkerMessage, *args: Any, **kwargs: Any) -> None:
        if isinstance(msg, ProgressReport):
            self.counters.add(msg.counters)
            self.failures.extend(msg.failures)
        else:
            self.messages.append(msg)

    def result(self) -> list[WorkerMessage]:
        # a task's request concurrency is gone when it ends: report none (its delta would pile up)
        self.counters.concurrency = 0
        # so are its transfers in flight and its byte budget (--metrics' gauges)
        self.counters.in_flight = self.counters.buffer_bytes = self.counters.buffer_limit = 0
        return [ProgressReport(0, self.counters, self.failures), *self.messages]


class _TaskThread:
    """What one Dask worker thread keeps between the tasks of a run: its event loop and the run's
    open stores (clients, connection pools, the retry wrapper's AIMD and rate state). Opening them
    per task cost a new loop, new clients and new connections (TLS handshakes) every few pages;
    now a thread opens them once per run. A task of another run closes the previous run's stores
    first (between tasks, on this thread's own loop), so at most one run's stores stay open per
    thread; they close with the worker process otherwise."""

    def __init__(self) -> None:
        from ..engine.loop import new_loop

        self.loop = new_loop()
        self.run_id: str | None = None
        self.stores: dict[str, Any] = {}

    def switch_to(self, run_id: str) -> None:
        if run_id == self.run_id:
            return
        old, self.stores, self.run_id = list(self.stores.values()), {}, run_id

        async def close_all() -> None:
            for store in old:
                try:
                    await store.close()
                except Exception:
                    pass

        if old:
            self.loop.run_until_complete(close_all())

    async def open(self, role: str, location: Any, options: Any) -> Any:
        """The run's store for `role` ("src" or "dst"), opened on first use in this thread."""
        store = self.stores.get(role)
        if store is None:
            from ..stores import open_store

            store = self.stores[role] = await open_store(location, options)
        return store

    def keeps(self, store: Any) -> bool:
        """Whether `store` is one of the run's kept stores (the worker must not close it)."""
        return any(store is s for s in self.stores.values())


_THREADS = threading.local()


def _task_thread() -> _TaskThread:
    here: _TaskThread | None = getattr(_THREADS, "state", None)
    if here is None or here.loop.is_closed():
        here = _THREADS.state = _TaskThread()
    return here


def run_units(plan: Plan, units: list[WorkUnit], body_bytes: int, resume: Any,
              run_id: str | None = None) -> tuple[list[WorkerMessage], float]:
    """A Dask task: run the Worker over `units` on this thread's event loop, with the stores this
    thread keeps open for the run `run_id` (_TaskThread), and return its messages (engine/messages.py)
    and the CPU seconds this thread used."""
    from ..engine.run.worker import Worker

    cpu = time.thread_time()
    units_q: queue.Queue[WorkUnit | None] = queue.Queue()
    for unit in units:
        units_q.put(unit)
    units_q.put(None)
    events = _Collector()
    here = _task_thread()
    here.switch_to(run_id or uuid.uuid4().hex)
    where = _this_worker()

    def unreachable(exc: StoreError) -> str:
        return (f"Dask worker {where} cannot reach the endpoint {endpoint_of(_side_of(plan, exc))} ({exc}); "
                "objects not yet copied were not attempted; fix it and run the same command with --resume")

    worker = Worker(plan, 0, units_q, events, body_bytes, None, resume, stores=here, unreachable=unreachable)
    here.loop.run_until_complete(worker.run())
    return events.result(), time.thread_time() - cpu


def _this_worker() -> str:
    """The Dask worker running this task: its address, and its name when it has one of its own."""
    try:
        from distributed import get_worker

        w = get_worker()
    except Exception:  # not inside a Dask worker (a test calling run_units itself)
        return f"in process {os.getpid()}"
    name = getattr(w, "name", None)
    return f"{w.address} ({name})" if name is not None and str(name) != w.address else str(w.address)


class ClusterHandle:
    """The cluster as one worker of the coordinator, looking like a Process to it (is_alive,
    exitcode, terminate, join, kill, request_stop): a thread that turns units from `units_q`
    into tasks and their results into messages on `events_q`."""

    def __init__(self, cluster: Cluster, plan: Plan, units_q: Any, events_q: Any, body_bytes: int,
                 resume: Any) -> None:
        self.cluster = cluster
        self.client = cluster.client
        self.plan = plan
        self.units_q = units_q
        self.events_q = events_q
        self.body_bytes = body_bytes
        self.resume = resume if resume is None else replace_log_dir(resume)
        opts = plan.options
        self.max_tasks = 2 * opts.resolved_workers()
        self.batch = max(1, opts.pages_ahead)
        self._stopping = False
        self._forced = False
        self._done_q: queue.Queue[Any] = queue.Queue()
        self.cpu = 0.0  # the tasks' own threads; the workers' processes are measured at the end
        # A list/get server pages by token: one chain. Tasks report only when they end, so a chain
        # listed by its tasks would advance one task at a time; the driver lists it instead, hands
        # each page's rest on at once, and a task copies the page (listing it again by its token).
        self.lister = _ChainLister(plan) if plan.src.kind == "http" and plan.manifest is None \
            and plan.single_key is None else None
        self._rests: dict[WorkUnit, WorkUnit | None] = {}  # units listed here -> the rest handed on
        self._usage_start = cluster.usage()
        self.run_id = uuid.uuid4().hex  # the tasks' threads keep this run's stores open (_TaskThread)
        self.thread = threading.Thread(target=self._main, name="s3bulk-cluster", daemon=True)
        self.thread.start()

    # --- what the coordinator calls -------------------------------------------------------
    def request_stop(self) -> None:
        """Graceful stop: submit nothing more; tasks running finish and report."""
        self._stopping = True

    def terminate(self) -> None:
        """Stop at once: cancel the tasks (their units are not journaled: a resume redoes them)."""
        self._stopping = self._forced = True

    kill = terminate

    def is_alive(self) -> bool:
        return self.thread.is_alive()

    def join(self, timeout: float | None = None) -> None:
        self.thread.join(timeout)

    @property
    def exitcode(self) -> int | None:
        return None if self.thread.is_alive() else 0

    # --- the thread ------------------------------------------------------------------------
    def _main(self) -> None:
        inflight: dict[Any, list[WorkUnit]] = {}
        closed = False  # the coordinator's None was read: no more units will come
        try:
            while not self._forced:
                while not closed and len(inflight) < self.max_tasks:
                    batch, closed = self._take(block=not inflight)
                    if not batch:
                        break
                    if self._stopping:
                        for unit in batch:
                            self.events_q.put(Abandoned(0, unit, False))
                        continue
                    if self.lister is not None:
                        batch = [unit for unit in batch if self._list_here(unit)]
                        if not batch:
                            break
                    fut = self.client.submit(run_units, self.plan, batch, self.body_bytes, self.resume,
                                             self.run_id, pure=False, key=f"s3bulk-units-{uuid.uuid4().hex}")
                    inflight[fut] = batch
                    fut.add_done_callback(self._done_q.put)
                if not inflight:
                    if closed:
                        break
                    continue
                try:  # the driver's listing waits on units coming back: look for them often
                    fut = self._done_q.get(timeout=0.1 if self.lister is None else 0.01)
                except queue.Empty:
                    continue
                if fut in inflight:
                    self._report(fut, inflight.pop(fut))
        except Exception as exc:  # a bug or a lost scheduler: say so rather than hang the run
            self.events_q.put(Fatal(0, f"cluster: {type(exc).__name__}: {exc}", 3))
        finally:
            if inflight:
                try:
                    self.client.cancel(list(inflight))
                except Exception:
                    pass
                for batch in inflight.values():
                    for unit in batch:
                        self.events_q.put(Abandoned(0, unit, unit in self._rests))
            if self.lister is not None:
                self.lister.close()
            self.events_q.put(Exited(0, *self._workers_usage()))

    def _workers_usage(self) -> tuple[int, float]:
        """(sum of the worker processes' peak RSS, CPU they used during the run): all of it, Dask's
        own work too and that of other clients sharing the cluster. The tasks' threads alone when a
        forced stop leaves no time to ask."""
        now = {} if self._forced else self.cluster.usage()
        if not now:
            return 0, self.cpu
        cpu = sum(c - self._usage_start.get(addr, (0.0, 0))[0] for addr, (c, _) in now.items())
        return sum(rss for _, rss in now.values()), max(self.cpu, cpu)

    def _take(self, block: bool) -> tuple[list[WorkUnit], bool]:
        """Up to `batch` units waiting in the coordinator's queue (waiting a little for the first
        when nothing is in flight); True once its None was read."""
        units: list[WorkUnit] = []
        try:
            unit = self.units_q.get(timeout=0.1) if block else self.units_q.get_nowait()
            while True:
                if unit is None:
                    return units, True
                units.append(unit)
                if len(units) >= self.batch:
                    return units, False
                unit = self.units_q.get_nowait()
        except queue.Empty:
            return units, False

    def _list_here(self, unit: WorkUnit) -> bool:
        """List the unit's page in the driver and hand its rest on at once (False: it failed,
        and the run is stopping with a fatal error)."""
        assert self.lister is not None
        try:
            rest = self.lister.rest_of(unit)
        except S3BulkError as exc:
            self.events_q.put(Fatal(0, f"listing failed: {exc}", exc.exit_code))
            return False
        self._rests[unit] = rest
        self.events_q.put(Listed(0, unit, [rest] if rest is not None else []))
        return True

    def _report(self, fut: Any, batch: list[WorkUnit]) -> None:
        if fut.status == "finished":
            messages, cpu = fut.result()
            self.cpu += cpu
            for msg in messages:
                if isinstance(msg, Listed) and msg.unit in self._rests:
                    continue  # the driver listed it and handed its rest on already
                if isinstance(msg, UnitDone) and msg.unit in self._rests:
                    msg = msg.replaced(rest=self._rests.pop(msg.unit))  # the rest the journal must see
                self.events_q.put(msg)
            return
        if fut.status == "cancelled" or self._forced:
            for unit in batch:
                self.events_q.put(Abandoned(0, unit, unit in self._rests))
            if not self._forced:
                self.events_q.put(Fatal(0, "cluster: a task was cancelled (scheduler lost?)", 3))
            return
        try:
            exc = fut.exception()
        except Exception as e:
            exc = e
        self.events_q.put(Fatal(0, f"cluster task failed: {type(exc).__name__}: {exc}", 3))


class _ChainLister:
    """Lists pages of a token-paged source in the driver, in an event loop of its own thread."""

    def __init__(self, plan: Plan) -> None:
        from ..engine.loop import new_loop

        self.plan = plan
        self.store: Any = None
        self.loop = new_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="s3bulk-cluster-list", daemon=True)
        self.thread.start()

    async def _rest(self, unit: WorkUnit) -> WorkUnit | None:
        from ..stores import open_store

        if self.store is None:
            self.store = await open_store(self.plan.src, self.plan.options.store_options())
        page = await self.store.list_page(self.plan.src.prefix, unit, self.plan.options.page_size)
        return unit.rest(page)

    def rest_of(self, unit: WorkUnit) -> WorkUnit | None:
        """What follows the unit's first page (None: that page is the last)."""
        import asyncio

        return asyncio.run_coroutine_threadsafe(self._rest(unit), self.loop).result()

    def close(self) -> None:
        import asyncio

        async def shut() -> None:
            if self.store is not None:
                await self.store.close()

        try:
            asyncio.run_coroutine_threadsafe(shut(), self.loop).result(5)
        except Exception:
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def replace_log_dir(resume: Any) -> Any:
    """The resume info for tasks: no per-object logs (they would land on the workers' disks, out
    of the journal's reach; a resume then redoes whole unfinished pages, which is safe)."""
    from ..engine.run.worker import ResumeInfo

    return ResumeInfo(resume.skip_pages, resume.uploads, None, resume.done_keys, keep_uploads=resume.keep_uploads)
