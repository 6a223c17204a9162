#!/usr/bin/env python3
"""Markdown tables of criterion results, for BENCHMARKS.md.

Reads every `<target>/criterion/**/new/{benchmark,estimates}.json` that criterion wrote (the
last run of each benchmark), groups the rows by criterion group (and, for rows named by a
`BenchmarkId`, by its function name: `prehashed/contains_hit/...`), and prints one table per
group: each row's median time (ns) and its ratio to the group's baseline row, the first of
BASELINES that the group has (a peer crate or the go-algorand-like baseline).

    python3 benches/tables.py [TARGET_DIR] [--filter REGEX]

TARGET_DIR defaults to `$CARGO_TARGET_DIR` or `target`. Ratios are only meaningful between rows
of one run: run the groups you print in one `cargo bench` invocation.
"""

import json
import os
import re
import sys
from collections import defaultdict
from pathlib import Path

# The row each group's ratios are taken against: the first name (exact, else as a prefix) that
# the group has. Mutex rows rebuild go-algorand's limiter; sbbf-rs-safe is the fastest peer
# filter; `limiter_off` is the handler without the limiter; `line_read` the memory's own limit;
# the ledger's `baseline` answers without blooms, as go-algorand did before its bloom change.
# Rows of one group written further apart than this came from different runs.
SAME_RUN_SECONDS = 30 * 60

BASELINES = [
    "mutex_prederived",
    "mutex_derive_blake2b",
    "sbbf-rs-safe",
    "sbbf-rs-safe+xxh3",
    "sbbf-rs-safe-contains",
    "limiter_off",
    "line_read",
    "no_blooms",
    "baseline",
    "rebuild_from_blocks",
]


def rows(target):
    """(table, row, median_ns, mtime) for every benchmark criterion has results of."""
    root = Path(target) / "criterion"
    for bench in sorted(root.glob("**/new/benchmark.json")):
        estimates = bench.with_name("estimates.json")
        if not estimates.exists():
            continue
        meta = json.loads(bench.read_text())
        median = json.loads(estimates.read_text())["median"]["point_estimate"]
        group, function, value = meta["group_id"], meta.get("function_id"), meta.get("value_str")
        mtime = estimates.stat().st_mtime
        if function is not None and value is not None:
            yield f"{group}/{function}", value, median, mtime
        else:
            yield group, function or value or meta["full_id"], median, mtime


def baseline(names):
    for wanted in BASELINES:
        if wanted in names:
            return wanted
    for wanted in BASELINES:
        for name in names:
            if name.startswith(wanted):
                return name
    return None


def fmt_ns(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3), ("ns", 1.0)):
        if ns >= scale or unit == "ns":
            v = ns / scale
            digits = 0 if v >= 100 else 1 if v >= 10 else 2
            return f"{v:.{digits}f} {unit}"


def main(argv):
    target = os.environ.get("CARGO_TARGET_DIR", "target")
    pattern = None
    args = iter(argv)
    for arg in args:
        if arg == "--filter":
            pattern = re.compile(next(args))
        else:
            target = arg
    tables = defaultdict(dict)
    times = defaultdict(list)
    for table, row, median, mtime in rows(target):
        if pattern is None or pattern.search(f"{table}/{row}"):
            tables[table][row] = median
            times[table].append(mtime)
    if not tables:
        sys.exit(f"no criterion results under {target}/criterion (run `cargo bench` first)")
    for table in sorted(tables):
        results = tables[table]
        base = baseline(results)
        print(f"`{table}`" + (f" (ratio: / `{base}`)" if base else ""))
        spread = max(times[table]) - min(times[table])
        if spread > SAME_RUN_SECONDS:
            # Rows left by different `cargo bench` invocations: their ratios compare runs.
            print(f"\nWARNING: rows written {spread / 60:.0f} minutes apart (not one run).")
        print()
        print("| row | median | ratio |" if base else "| row | median |")
        print("|---|---|---|" if base else "|---|---|")
        for row in sorted(results, key=results.get):
            cells = [f"`{row}`", fmt_ns(results[row])]
            if base:
                cells.append(f"{results[row] / results[base]:.2f}")
            print("| " + " | ".join(cells) + " |")
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
