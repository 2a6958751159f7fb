"""What `s3bulk ls` spends turning listed keys into its lines: nanoseconds a key, text and `--json`.

    uv run python bench/listing_render_bench.py [--keys 1000000] [--shape hashed] [--reps 7]
    uv run python bench/listing_render_bench.py --before COMMIT   # the same, also for COMMIT's ls.py
    uv run python bench/listing_render_bench.py --before COMMIT --instructions --keys 50000

Why: at 1,000,000 keys `ls` is bound by the one listing thread's CPU (parsing, rendering, cutting),
not by round trips; the render loop (cli/commands/ls.py `LsLines.render`) runs once per key. Here
pages of 1,000 pre-made entries (bench/slow_s3.py's key shapes, sizes that vary, the one mtime a
listing of S3 mostly shows) go through the loop and its text is written to /dev/null as the CLI
writes it; no listing, no network. Printed: the best of `--reps` runs, ns a key, per output. With
`--before`, COMMIT's ls.py (extracted with `git show`) is timed alternately in the same process.
`--instructions`: instead of time, the user-space instructions a key (valgrind's callgrind, the
same from run to run on a busy machine): each variant and output in a process of its own, once
rendering the keys and once not, the difference over the keys.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import slow_s3  # noqa: E402

from s3bulk.model import ObjectInfo  # noqa: E402


def pages_of(shape: str, n: int) -> list[list[ObjectInfo]]:
    keys = slow_s3.make_keys(shape, n)
    mtime = slow_s3.SYNTH_MTIME
    entries = [ObjectInfo(k, (i * 7919) % 10_000_000, mtime, "d41d8cd98f00b204e9800998ecf8427e", "STANDARD")
               for i, k in enumerate(keys)]
    return [entries[i:i + 1000] for i in range(0, n, 1000)]


def ls_module(commit: str | None) -> ModuleType:
    """cli/commands/ls.py as in the work tree, or as COMMIT has it (loaded under its package, so its
    relative imports resolve to the work tree's modules)."""
    if commit is None:
        from s3bulk.cli.commands import ls
        return ls
    text = subprocess.run(["git", "show", f"{commit}:s3bulk/cli/commands/ls.py"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "ls_before.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("s3bulk.cli.commands.ls_before", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def once(mod: ModuleType, pages: list[list[ObjectInfo]], json_out: bool, out) -> tuple[float, int]:
    lines = mod.LsLines(json_out)
    render, write = lines.render, out.write
    t = time.perf_counter()
    for page in pages:
        text = render(page)
        if text:
            write(text)
    out.flush()
    return time.perf_counter() - t, lines.count


def instructions(variant: str, json_out: bool, keys: int, shape: str, before: str | None) -> int:
    """Instructions of a child that renders (1) or only makes the pages (0), under callgrind."""
    counts = []
    for render in (0, 1):
        argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__,
                "--keys", str(keys), "--shape", shape, "--child", f"{variant},{int(json_out)},{render}"]
        if before:
            argv += ["--before", before]
        err = subprocess.run(argv, capture_output=True, text=True, check=True).stderr
        counts.append(int(next(ln for ln in err.splitlines() if "Collected :" in ln).split(":")[-1]))
    return counts[1] - counts[0]


def child(spec: str, keys: int, shape: str, before: str | None) -> None:
    variant, json_out, render = spec.split(",")
    pages = pages_of(shape, keys)
    mod = ls_module(before if variant == "before" else None)
    if render == "1":
        with open(os.devnull, "w", encoding="utf-8", errors="surrogateescape") as out:
            once(mod, pages, json_out == "1", out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--shape", default="hashed", choices=slow_s3.SHAPES)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--before", help="a commit whose ls.py is timed too, alternately")
    ap.add_argument("--instructions", action="store_true", help="count instructions (valgrind) instead of time")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a.child, a.keys, a.shape, a.before)
    if a.instructions:
        for variant in ("now", "before") if a.before else ("now",):
            for json_out in (False, True):
                n = instructions(variant, json_out, a.keys, a.shape, a.before)
                print(f"{variant:6s} {'--json' if json_out else 'text':6s} {a.keys:,} {a.shape} keys: "
                      f"{n / a.keys:6.0f} instructions a key", flush=True)
        return
    pages = pages_of(a.shape, a.keys)
    variants = {"now": ls_module(None)}
    if a.before:
        variants["before"] = ls_module(a.before)
    best: dict[tuple[str, bool], float] = {}
    with open(os.devnull, "w", encoding="utf-8", errors="surrogateescape") as out:
        for rep in range(a.reps):
            for name, mod in (variants.items() if rep % 2 == 0 else reversed(variants.items())):
                for json_out in (False, True):
                    took, count = once(mod, pages, json_out, out)
                    assert count == a.keys
                    k = (name, json_out)
                    best[k] = min(best.get(k, took), took)
    for (name, json_out), took in sorted(best.items()):
        print(f"{name:6s} {'--json' if json_out else 'text':6s} {a.keys:,} {a.shape} keys: "
              f"{took * 1e9 / a.keys:6.0f} ns a key (best of {a.reps})")


if __name__ == "__main__":
    main()
