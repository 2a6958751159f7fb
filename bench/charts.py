#!/usr/bin/env python3
"""Draw bench/charts/*.png from the result files in bench/results/.

    uv run --frozen --group bench python bench/charts.py           # all charts
    uv run --frozen --group bench python bench/charts.py --list    # which result files feed which chart

Why a script: a chart drawn by hand goes stale the day a benchmark runs again. Each chart here
reads the JSON a benchmark wrote (bench/results/ keeps the latest run of each) and says in its
title what was measured and where; bench/README.md shows them beside the tables. Run it after a
benchmark whose results a chart reads, and commit the PNGs with the results.

Charts (a series with few points is drawn with what there is, and its caption says so):
- headline.png: objects/s for 20,000 objects of 100 B, per tool and its version (peers_bench.py,
  versitygw; the CRT client has no server-side copy bar: aws-cli v2 copies with its classic client).
- objects_per_s.png: objects/s against the object count, per tool (listing_bench.py copies at
  50 ms per request; memory_bench.py from `s3bulk serve`).
- listing_keys_per_s.png: listing keys/s against the key count, per tool and key shape
  (listing_bench.py at 50 ms per request).
- peak_memory.png: peak memory against the object or key count (memory_bench.py, listing_bench.py).
- throughput_by_size.png: MB/s against object size, per tool (peers_bench.py: 100 B and 1 GiB;
  the 1 GiB download again from footprint_bench.py's later run).
- link_speed.png: speed as a multiple of aws-cli's for one object down or up, per tool (the AWS
  CRT client at its defaults and tuned among them), over a toxiproxy-shaped link (25 MB/s a
  connection and 10 ms; 100 KB/s) and on loopback, with the goals set for s3bulk marked, each
  in its reference tool's colour (link_bench.py).

Matplotlib's Agg backend: no display, the same PNG on any machine.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
CHARTS = HERE / "charts"

# one colour and marker per tool, the same on every chart
STYLE = {
    "s3bulk": ("#1f77b4", "o"),
    "s3bulk-unordered": ("#17becf", "s"),
    "s3bulk --max-memory 128MiB": ("#17becf", "s"),
    "s5cmd": ("#ff7f0e", "^"),
    "rclone": ("#2ca02c", "D"),
    "aws-cli": ("#7f7f7f", "v"),
    "crt": ("#d62728", "P"),
    "crt-tuned": ("#ff9896", "P"),
}
SHAPES = ("flat", "dated", "hashed")

# the result files each chart reads (relative to bench/results/)
PEERS = "peers-2026-11-22.json"  # the last full run (1 GiB, listing): throughput_by_size
PEERS_SMALL = "peers-2026-11-28-small.json"  # small objects with the current peers (the CRT client, rclone 1.68)
BIG_LATER = "footprint-2026-11-23-dl-big-s6-quiet.json"
COPIES = ["copy11-grow-20k.json", "copy11-100k-hashed-quiet.json"]
MEMORY = "memory-2026-11-22.json"
LISTINGS = ["listing-2026-11-23-100k-ls11.json", "listing-2026-11-23-1m-ls11-flat.json",
            "listing-2026-11-23-1m-ls11-dated.json", "listing-2026-11-23-1m-ls11-hashed.json",
            "listing-2026-11-23-2m-ls11-mem.json"]
LINK = "scorecard-2026-11-28-s17-link.json"  # the s17 sitting's link row (link_bench.py, 5 reps)
SOURCES = {
    "headline.png": [PEERS_SMALL],
    "objects_per_s.png": [*COPIES, MEMORY],
    "listing_keys_per_s.png": LISTINGS,
    "peak_memory.png": [MEMORY, *LISTINGS],
    "throughput_by_size.png": [PEERS, BIG_LATER],
    "link_speed.png": [LINK],
}


def load(name: str) -> Any:
    return json.loads((RESULTS / name).read_text())


def labelled(tool: str, versions: dict[str, str]) -> str:
    """A peer's legend label with its version, as the results file recorded it (s3bulk: a commit, left out)."""
    text = versions.get(tool, "")
    if tool.startswith("s3bulk") or not text:
        return tool
    if tool.startswith("crt"):
        m = re.search(r"awscrt (\S+)", text)
        return f"{tool} (awscrt {m.group(1)})" if m else tool
    m = re.search(r"v?\d+\.\d+(?:\.\d+)?", text.split("Python/")[0])
    return f"{tool} {m.group(0)}" if m else tool


def style(tool: str) -> dict[str, Any]:
    color, marker = STYLE.get(tool, ("black", "x"))
    return {"color": color, "marker": marker}


def listing_points(kind: str, value: str) -> dict[tuple[str, str], list[tuple[int, float]]]:
    """{(shape, tool): [(keys, value)]} over the listing results, kind 'ls' rows only."""
    points: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for name in LISTINGS:
        data = load(name)
        keys = data["config"]["keys"]
        for row, m in data["summary"].items():
            what, shape, tool = row.split("|")
            if what == kind and m["ok"] == m["runs"]:
                points.setdefault((shape, tool), []).append((keys, m[value]))
    return {k: sorted(v) for k, v in points.items()}


def headline(out: Path) -> None:
    data = load(PEERS_SMALL)
    scenarios = [("dl-small", "download"), ("ul-small", "upload"), ("cp-small", "server-side copy")]
    tools = data["config"]["tools"]
    fig, ax = plt.subplots(figsize=(8, 4.2))
    width = 0.8 / len(tools)
    for i, tool in enumerate(tools):  # a tool that does not do a scenario (crt: server-side copy) has no bar
        cells = [(j, data["summary"].get(f"versitygw|{s}|{tool}")) for j, (s, _) in enumerate(scenarios)]
        cells = [(j, m) for j, m in cells if m and m.get("ok")]
        rates = [m["obj_per_s"] for _, m in cells]
        xs = [j + (i - (len(tools) - 1) / 2) * width for j, _ in cells]
        bars = ax.bar(xs, rates, width, label=labelled(tool, data.get("versions", {})), color=style(tool)["color"])
        ax.bar_label(bars, labels=[f"{r:,.0f}" for r in rates], fontsize=7, padding=2)
    ax.set_xticks(range(len(scenarios)), [label for _, label in scenarios])
    ax.set_ylabel("objects per second (median of the reps)")
    ax.set_title(f"20,000 objects of 100 B, versitygw on loopback, 2 cores ({data['date']})", fontsize=10)
    ax.legend(frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def objects_per_s(out: Path) -> None:
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    points: dict[str, list[tuple[int, float]]] = {}
    for name in COPIES:
        data = load(name)
        for row, m in data["summary"].items():
            kind, _shape, tool = row.split("|")
            if kind == "copy" and m["ok"] == m["runs"]:
                points.setdefault(tool, []).append((data["config"]["keys_copy"], m["keys_per_s"]))
    for tool, pts in sorted(points.items()):
        pts.sort()
        left.plot([p[0] for p in pts], [p[1] for p in pts], label=tool, **style(tool))
    left.set_title("copy from S3 at 50 ms per request (hashed keys)\nonly 2 counts measured: 20,000 and 100,000",
                   fontsize=9)
    series: dict[str, list[tuple[int, float]]] = {}
    for row in load(MEMORY):
        tool = "s3bulk" if row["settings"] == "default" else f"s3bulk {row['settings']}"
        series.setdefault(tool, []).append((row["objects"], row["objects"] / row["wall_s"]))
    for tool, pts in sorted(series.items()):
        pts.sort()
        right.plot([p[0] for p in pts], [p[1] for p in pts], label=tool, **style(tool))
    right.set_title("copy from `s3bulk serve` to tmpfs (no latency)\ns3bulk only", fontsize=9)
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_xlabel("objects of 100 B")
        ax.set_ylabel("objects per second")
        ax.set_ylim(bottom=0)
        ax.legend(frameon=False, fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def listing_keys_per_s(out: Path) -> None:
    points = listing_points("ls", "keys_per_s")
    fig, axes = plt.subplots(1, len(SHAPES), figsize=(12, 4), sharey=True)
    for ax, shape in zip(axes, SHAPES):
        for (s, tool), pts in sorted(points.items()):
            if s != shape:
                continue
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=tool, **style(tool))
        ax.set_xscale("log")
        ax.set_title(f"{shape} keys", fontsize=9)
        ax.set_xlabel("keys listed")
        ax.grid(alpha=0.3)
        ax.legend(frameon=False, fontsize=8)
    axes[0].set_ylabel("keys per second (one run each)")
    fig.suptitle("s3bulk ls against s5cmd ls at 50 ms per request (bench/slow_s3.py); "
                 "2,000,000 keys: s3bulk only, flat and hashed", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def peak_memory(out: Path) -> None:
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    series: dict[str, list[tuple[int, float]]] = {}
    for row in load(MEMORY):
        tool = "s3bulk" if row["settings"] == "default" else f"s3bulk {row['settings']}"
        series.setdefault(tool, []).append((row["objects"], row["peak_rss_mib"]))
    for tool, pts in sorted(series.items()):
        pts.sort()
        left.plot([p[0] for p in pts], [p[1] for p in pts], label=tool, **style(tool))
    left.set_title("copy from `s3bulk serve`: peak RSS, all processes", fontsize=9)
    left.set_xlabel("objects copied")
    points = listing_points("ls", "peak_rss_tree_mib")
    for (shape, tool), pts in sorted(points.items()):
        if shape != "hashed":
            continue
        right.plot([p[0] for p in pts], [p[1] for p in pts], label=tool, **style(tool))
    right.set_title("ls at 50 ms per request, hashed keys: peak RSS of the process tree\n"
                    "s5cmd measured at 100,000 and 1,000,000 keys only", fontsize=9)
    right.set_xlabel("keys listed")
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_ylabel("MiB")
        ax.set_ylim(bottom=0)
        ax.legend(frameon=False, fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def throughput_by_size(out: Path) -> None:
    data = load(PEERS)
    cfg = data["config"]
    sizes = {"small": cfg["small_size"], "big": cfg["big_mib"] * 1024 * 1024}
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True)
    for ax, (direction, label) in zip(axes, [("dl", "download"), ("ul", "upload")]):
        for tool in cfg["tools"]:
            xs, ys = [], []
            for kind, size in sizes.items():
                m = data["summary"].get(f"versitygw|{direction}-{kind}|{tool}")
                if m and m["ok"] == m["runs"]:
                    xs.append(size)
                    ys.append(m["mb_per_s"])
            ax.plot(xs, ys, label=tool, linestyle=":", **style(tool))
        if direction == "dl":  # the 1 GiB download measured again later, on a quiet machine
            later = load(BIG_LATER)
            for tool in ("s3bulk", "s5cmd"):
                walls = sorted(r["wall_s"] for r in later["records"] if r["tool"] == tool and r["ok"])
                if walls:
                    rate = sizes["big"] / walls[len(walls) // 2] / 1e6
                    ax.plot([sizes["big"]], [rate], linestyle="none", markerfacecolor="none", markersize=9,
                            label=f"{tool}, later run (footprint_bench)", **style(tool))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("object size, bytes (20,000 x 100 B; 1 x 1 GiB)")
        ax.set_title(f"{label}, versitygw on loopback ({data['date']})", fontsize=9)
        ax.grid(alpha=0.3, which="both")
        ax.legend(frameon=False, fontsize=8)
    axes[0].set_ylabel("MB per second (median of 3)")
    fig.suptitle("throughput against object size: only two sizes measured (the dotted lines join them, "
                 "nothing between was measured)", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def link_speed(out: Path) -> None:
    data = load(LINK)
    cells = data["summary"]
    tools = data["tools"]
    short = {"25MBps-10ms": "25 MB/s a conn., 10 ms", "100KBps": "100 KB/s a conn.", "loopback": "loopback"}
    fig, ax = plt.subplots(figsize=(10, 4.6))
    width = 0.8 / len(tools)
    extra = ["#9467bd", "#8c564b", "#e377c2"]  # further s3bulk trees of an A/B run
    for i, tool in enumerate(tools):
        color = style(tool)["color"] if tool in STYLE else extra[i % len(extra)]
        xs, ys, labels = [], [], []
        for j, c in enumerate(cells):
            t = c["tools"].get(tool, {})
            if "speed_vs_aws" in t:
                xs.append(j + (i - (len(tools) - 1) / 2) * width)
                ys.append(t["speed_vs_aws"])
                labels.append(f"{t['mb_per_s']:,.3g}")
        bars = ax.bar(xs, ys, width, label=labelled(tool, data.get("versions", {})), color=color)
        ax.bar_label(bars, labels=labels, fontsize=6, padding=2, rotation=90)
    marked: set[str] = set()
    for j, c in enumerate(cells):  # the goals for s3bulk, as multiples of aws-cli's speed
        goals = c.get("goals") or ([c["goal"]] if c.get("goal") else [])  # "goal": results before the CRT anchor
        for g in goals:
            ref = c["tools"].get(g["ref"], {})
            if "speed_vs_aws" not in ref:
                continue
            level = ref["speed_vs_aws"] * g["x"] if g["kind"] == "speed" else ref["speed_vs_aws"] / g["x"]
            what = f"goal: {'>=' if g['kind'] == 'speed' else '<='} {g['x']:g}x {g['ref']}"
            ax.hlines(level, j - 0.45, j + 0.45, colors=style(g["ref"])["color"], linestyles="--", linewidth=1.2,
                      label=None if what in marked else what)
            marked.add(what)
    ax.axhline(1.0, color="#7f7f7f", linewidth=0.6)
    ax.set_xticks(range(len(cells)), [f"{c['mib']:,} MiB {c['direction']}\n{short.get(c['link'], c['link'])}"
                                      for c in cells], fontsize=8)
    ax.set_ylabel("speed / aws-cli's (median of the repeats)")
    rounds: dict[str, int] = {}
    for r in data["runs"]:
        rounds[r["link"]] = max(rounds.get(r["link"], 0), r["rep"] + 1)
    reps = ", ".join(f"{k}: {rounds[k]}" for k in short if k in rounds)
    ax.set_title(f"one object, each tool with its default options (crt-tuned: tuned), versitygw behind toxiproxy, "
                 f"2 shared cores\n"
                 f"{data['date']}, repeats {reps}; bar labels: MB/s", fontsize=9)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.1)
    ax.legend(frameon=False, fontsize=8, ncol=min(len(tools) + len(marked), 6), loc="upper center",
              bbox_to_anchor=(0.5, -0.14))
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


CHART_FUNCS = {
    "headline.png": headline,
    "objects_per_s.png": objects_per_s,
    "listing_keys_per_s.png": listing_keys_per_s,
    "peak_memory.png": peak_memory,
    "throughput_by_size.png": throughput_by_size,
    "link_speed.png": link_speed,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="print which result files feed which chart")
    args = ap.parse_args(argv)
    missing = sorted({n for names in SOURCES.values() for n in names if not (RESULTS / n).exists()})
    if args.list or missing:
        for chart, names in SOURCES.items():
            print(f"{chart}: {', '.join(names)}")
    if missing:
        print(f"charts: result files missing: {', '.join(missing)}", file=sys.stderr)
        return 1
    if args.list:
        return 0
    CHARTS.mkdir(exist_ok=True)
    plt.rcParams.update({"font.size": 9, "svg.hashsalt": "s3bulk", "path.simplify": True})
    for name, draw in CHART_FUNCS.items():
        draw(CHARTS / name)
        print(f"wrote {(CHARTS / name).relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
