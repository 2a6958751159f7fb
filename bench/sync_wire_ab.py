"""What a sync down puts on the wire, the tree before a change (A) against this checkout (B):
connections opened, bytes and socket reads each way, request and answer heads (which headers,
how long), through a logging TCP proxy in front of versitygw. The question it answers: when the
server's and proxy's CPU differ between A and B on the same request counts, what differs on the
wire? (issue 32's shaped down-new, bench/README "Sync down: what differs on the wire".)

    uv run --frozen python bench/sync_wire_ab.py --before ca25f19 --objects 2000

Each tree seeds its own bucket with its own `copy` (as sync_ab_bench.py does), then each tree
syncs each bucket down (A from A's, A from B's, B from A's, B from B's), so a difference the
seeding makes (headers stored with the objects) is told from one the downloading client makes.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import resource
import time
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from link_bench import LINKS, compile_roots, shaped_url, start_toxiproxy  # noqa: E402
from peers_bench import log, s3_client, start_versitygw, tool_env, tree_cpu_s, write_small_tree  # noqa: E402
from sync_ab_bench import before_tree  # noqa: E402


class Tap:
    """A TCP proxy that counts connections, bytes and reads each way and keeps the bytes."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.conns: list[dict] = []
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.port = 0
        threading.Thread(target=self._run, daemon=True).start()
        self.ready.wait()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._conn, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self.ready.set()
        self.loop.run_forever()

    async def _conn(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        sr, sw = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        loop = asyncio.get_running_loop()
        rec = {"up": bytearray(), "down": bytearray(), "up_reads": 0, "down_reads": 0, "closed_by": None,
               "opened": loop.time(), "closed": None}
        self.conns.append(rec)

        async def pump(r: asyncio.StreamReader, w: asyncio.StreamWriter, way: str) -> None:
            while True:
                b = await r.read(1 << 16)
                if not b:
                    if rec["closed_by"] is None:
                        rec["closed_by"] = "client" if way == "up" else "server"
                        rec["closed"] = loop.time()
                    try:
                        w.write_eof()
                    except OSError:
                        pass
                    return
                rec[way] += b
                rec[way + "_reads"] += 1
                w.write(b)
                await w.drain()

        await asyncio.gather(pump(cr, sw, "up"), pump(sr, cw, "down"), return_exceptions=True)
        cw.close()
        sw.close()

    def take(self) -> list[dict]:
        out, self.conns = self.conns, []
        return out


def heads(stream: bytes, request: bool) -> list[bytes]:
    """The heads in one direction of a connection (bodies skipped by Content-Length)."""
    out, i = [], 0
    while i < len(stream):
        j = stream.find(b"\r\n\r\n", i)
        if j < 0:
            break
        head = bytes(stream[i:j])
        out.append(head)
        n = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                n = int(v.strip())
        if not request and head.split(b" ", 2)[1:2] == [b"304"]:
            n = 0
        i = j + 4 + n
    return out


def analyse(conns: list[dict]) -> dict:
    reqs = [h for c in conns for h in heads(c["up"], True)]
    answers = [h for c in conns for h in heads(c["down"], False)]
    methods = collections.Counter(h.split(b" ", 1)[0].decode() for h in reqs)
    req_headers = collections.Counter(line.split(b":", 1)[0].strip().lower().decode()
                                      for h in reqs for line in h.split(b"\r\n")[1:])
    ans_headers = collections.Counter(line.split(b":", 1)[0].strip().lower().decode()
                                      for h in answers for line in h.split(b"\r\n")[1:])
    gets = [h for h in reqs if h.startswith(b"GET ") and b"list-type" not in h.split(b"\r\n", 1)[0]]
    status = collections.Counter(h.split(b" ", 2)[1].decode() for h in answers)
    t0 = min((c["opened"] for c in conns), default=0.0)
    t1 = max((c["closed"] or c["opened"] for c in conns), default=0.0)
    per_conn = sorted(len(heads(c["up"], True)) for c in conns)
    # a connection closed well before the run's last one: the client dropped it mid-run
    early = sum(1 for c in conns if c["closed"] is not None and c["closed"] < t1 - 0.5)
    return {"connections": len(conns), "requests": len(reqs), "methods": dict(methods),
            "run_s": round(t1 - t0, 2), "closed_mid_run": early,
            "requests_per_connection": {"min": per_conn[0] if per_conn else 0,
                                        "median": per_conn[len(per_conn) // 2] if per_conn else 0,
                                        "max": per_conn[-1] if per_conn else 0},
            "opened_s": sorted(round(c["opened"] - t0, 2) for c in conns)[::max(1, len(conns) // 12)],
            "status": dict(status),
            "closed_by": dict(collections.Counter(str(c["closed_by"]) for c in conns)),
            "bytes_up": sum(len(c["up"]) for c in conns), "bytes_down": sum(len(c["down"]) for c in conns),
            "reads_up": sum(c["up_reads"] for c in conns), "reads_down": sum(c["down_reads"] for c in conns),
            "get_head_bytes_mean": round(sum(map(len, gets)) / max(1, len(gets)), 1),
            "answer_head_bytes_mean": round(sum(map(len, answers)) / max(1, len(answers)), 1),
            "request_headers": dict(req_headers), "answer_headers": dict(ans_headers),
            "sample_get": gets[len(gets) // 2].decode(errors="replace") if gets else "",
            "sample_answer": answers[-1].decode(errors="replace") if answers else ""}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default="ca25f19")
    ap.add_argument("--cache-dir", default=str(ROOT / ".cache" / "ab-trees"))
    ap.add_argument("--objects", type=int, default=2000)
    ap.add_argument("--link", default="loopback", choices=sorted(LINKS),
                    help="the proxy in front of versitygw (the tap sits in front of it)")
    ap.add_argument("--reps", type=int, default=1, help="rounds of the four downloads")
    ap.add_argument("--runs", default="A:a,A:b,B:a,B:b",
                    help="TREE:BUCKET downloads of a round (default %(default)s: each tree, each tree's seed)")
    ap.add_argument("--json", default=None, help="write the analysis here")
    args = ap.parse_args()
    trees = {"A": before_tree(args.before, Path(args.cache_dir)), "B": ROOT}
    compile_roots(trees)
    work = Path(tempfile.mkdtemp(prefix="s3bulk-wire-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None))
    srv = start_versitygw(work, keep_alive=True)
    result: dict = {}
    tox = None
    try:
        s3 = s3_client(srv)
        write_small_tree(work / "src", args.objects, 100)
        upstream = srv.url
        if LINKS[args.link]["rate_kbps"] is not None:
            tox = start_toxiproxy(work)
            upstream = shaped_url(tox, args.link, srv.url)
        tap = Tap(int(upstream.rsplit(":", 1)[1]))
        url = f"http://127.0.0.1:{tap.port}"

        def run(tree: str, *argv: str) -> dict:
            env = {k: v for k, v in tool_env("s3bulk", srv, work).items() if not k.startswith("S3BULK_")}
            state = Path(tempfile.mkdtemp(dir=work))
            env.update(XDG_CACHE_HOME=str(work / f"cache-{tree}"), XDG_STATE_HOME=str(state))
            cpu = [tree_cpu_s(srv.server_pid()), tree_cpu_s(tox.proc.pid) if tox else 0.0]
            ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.monotonic()
            p = subprocess.run([str(trees[tree] / ".venv" / "bin" / "s3bulk"), *argv, "--endpoint-url", url,
                                "--json"], env=env, capture_output=True, text=True)
            wall = time.monotonic() - t0
            ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            if p.returncode != 0:
                raise SystemExit(f"{tree} {argv}: exit {p.returncode}: {p.stderr[-800:]}")
            return {"wall_s": round(wall, 3),
                    "client_cpu_s": round(ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime, 3),
                    "server_cpu_s": round(tree_cpu_s(srv.server_pid()) - cpu[0], 3),
                    "proxy_cpu_s": round((tree_cpu_s(tox.proc.pid) if tox else 0.0) - cpu[1], 3)}

        for tree in trees:
            s3.create_bucket(Bucket=f"wire-{tree.lower()}")
            run(tree, "copy", str(work / "src"), f"s3://wire-{tree.lower()}/seed/")
            result[f"seed by {tree}"] = analyse(tap.take())
        for tree in trees:  # warm each tree's endpoint cache
            run(tree, "sync", "s3://wire-a/seed/d0000/", str(work / f"warm-{tree}"))
            tap.take()
        for rep in range(args.reps):
            for pair in args.runs.split(","):
                tree, bucket = pair.split(":")
                out = work / f"down-{tree}-{bucket}"
                cost = run(tree, "sync", f"s3://wire-{bucket}/seed/", str(out))
                time.sleep(0.3)  # the tap sees the last closes
                r = {**cost, **analyse(tap.take())}
                result[f"{tree} downloads {bucket.upper()}'s objects, rep {rep}"] = r
                log(f"{tree} <- {bucket.upper()} rep {rep}: " + ", ".join(
                    f"{k} {r[k]}" for k in ("wall_s", "client_cpu_s", "server_cpu_s", "proxy_cpu_s", "connections",
                                            "requests")))
                shutil.rmtree(out)
    finally:
        if tox is not None:
            tox.stop()
        srv.stop()
        shutil.rmtree(work, ignore_errors=True)
    for name, r in result.items():
        print(f"== {name}")
        print(json.dumps({k: v for k, v in r.items() if not k.startswith("sample")}, indent=None))
        print("-- a GET:\n" + r["sample_get"] + "\n-- an answer:\n" + r["sample_answer"] + "\n")
    print(table(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


def table(result: dict) -> str:
    """Medians over the reps of each download (tree, objects): the markdown table of bench/README."""
    cells: dict[str, list[dict]] = {}
    for name, r in result.items():
        if ", rep " in name:
            cells.setdefault(name.split(", rep ")[0], []).append(r)
    cols = ("wall_s", "client_cpu_s", "server_cpu_s", "proxy_cpu_s", "connections", "requests",
            "get_head_bytes_mean", "answer_head_bytes_mean")
    lines = ["| download | " + " | ".join(cols) + " |", "| --- |" + " --- |" * len(cols)]
    for name, rs in cells.items():
        lines.append(f"| {name} | " + " | ".join(f"{statistics.median(r[c] for r in rs):g}" for c in cols) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
