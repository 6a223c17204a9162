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
# filter; `limiter_off` is the handler without the limiter; `line_read` the memory's own limit.
BASELINES = [
    "mutex_prederived",
    "mutex_derive_blake2b",
    "sbbf-rs-safe",
    "sbbf-rs-safe+xxh3",
    "sbbf-rs-safe-contains",
    "limiter_off",
    "line_read",
    "no_blooms",
    "rebuild_from_blocks",
]


def rows(target):
    """(table, row, median_ns) for every benchmark criterion has results of."""
    root = Path(target) / "criterion"
    for bench in sorted(root.glob("**/new/benchmark.json")):
        estimates = bench.with_name("estimates.json")
        if not estimates.exists():
            continue
        meta = json.loads(bench.read_text())
        median = json.loads(estimates.read_text())["median"]["point_estimate"]
        group, function, value = meta["group_id"], meta.get("function_id"), meta.get("value_str")
        if function is not None and value is not None:
            yield f"{group}/{function}", value, median
        else:
            yield group, function or value or meta["full_id"], median


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
    if ns >= 1e6:
        return f"{ns / 1e6:.3g} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.3g} us"
    return f"{ns:.3g} ns"


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
    for table, row, median in rows(target):
        if pattern is None or pattern.search(f"{table}/{row}"):
            tables[table][row] = median
    if not tables:
        sys.exit(f"no criterion results under {target}/criterion (run `cargo bench` first)")
    for table in sorted(tables):
        results = tables[table]
        base = baseline(results)
        print(f"`{table}`" + (f" (ratio: / `{base}`)" if base else ""))
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
