#!/usr/bin/env python3
"""Compares builds of wfc-bench: by the clock (alternated runs) or by instructions (callgrind).

Two builds of the benchmark (say main's and a branch's) measured one after the other drift with
the machine's load; measured in turn, round after round, they share it. This runs each binary's
`--quick --json` in turn for a number of rounds and prints, for every workload, engine and
history level, the median ratio to hand-written code (and the compiled engine over the
interpreter at the express level) with each round's figure. docs/benchmarks.md's "medians of
alternated runs" are these.

    python3 wfc-bench/compare.py clock [--rounds 5] [--args "--only task-chain-100"] BIN...

`instructions` counts what callgrind sees inside the tokio runtime (the engines' work; the
benchmark's setup and the hand-written rows, which run outside it, are not counted) for two run
counts and prints the difference per transition: deterministic, so the figure to compare across
machines and days.

    python3 wfc-bench/compare.py instructions --workload count-loop-1000 \
        --engine compiled-express [--runs 5,15] BIN...

Build a binary to compare with `cargo build --release -p wfc-bench` and copy
`target/release/wfc-bench` aside before building the other.
"""

import argparse
import collections
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile

def transitions_of(binary, workload, engine):
    """The transitions of one execution of `workload`, as the binary reports them (one untimed
    run: its transitions a second over its executions a second)."""
    run = subprocess.run(
        [binary, "--quick", "--json", "--only", workload, "--engine", engine, "--runs", "1"],
        capture_output=True,
        text=True,
    )
    if run.returncode != 0:
        sys.exit(f"compare.py: {binary} refused {workload!r} on {engine!r}: {run.stderr.strip()}")
    rows = json.loads(run.stdout)["workloads"]
    row = next((r for r in rows if r["engine"] != "handwritten" and r.get("executions_per_sec")), None)
    if row is None:
        sys.exit(f"compare.py: {binary} ran no {workload!r} on {engine!r}")
    return round(row["transitions_per_sec"] / row["executions_per_sec"])


def clock(args):
    rows = collections.defaultdict(lambda: collections.defaultdict(list))
    for _ in range(args.rounds):
        for binary in args.binaries:
            out = subprocess.run(
                [binary, "--quick", "--json", *shlex.split(args.args)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            workloads = json.loads(out)["workloads"]
            by_key = {(w["name"], w["engine"], w["history"]): w for w in workloads}
            for (name, engine, history), w in by_key.items():
                if w.get("ratio_to_handwritten") is not None:
                    rows[binary][(name, engine, history)].append(w["ratio_to_handwritten"])
            for name in {w["name"] for w in workloads}:
                compiled = by_key.get((name, "compiled", "express"))
                interp = by_key.get((name, "interp", "express"))
                if compiled and interp and interp.get("executions_per_sec"):
                    ratio = compiled["executions_per_sec"] / interp["executions_per_sec"]
                    rows[binary][(name, "compiled/interp", "express")].append(ratio)
    for binary in args.binaries:
        print(f"== {binary}")
        for (name, engine, history), values in sorted(rows[binary].items()):
            if engine == "handwritten":
                continue
            each = " ".join(f"{v:.3f}" for v in values)
            print(f"{name:20} {engine:16} {history:8} median {statistics.median(values):.3f}  {each}")


def instructions(args):
    low, high = (int(n) for n in args.runs.split(","))
    if high <= low:
        sys.exit("compare.py: --runs wants two counts, the second larger")
    for binary in args.binaries:
        transitions = transitions_of(binary, args.workload, args.engine)
        counts = []
        for runs in (low, high):
            with tempfile.TemporaryDirectory() as tmp:
                out_file = os.path.join(tmp, "callgrind.out")
                subprocess.run(
                    [
                        "valgrind",
                        "--tool=callgrind",
                        f"--callgrind-out-file={out_file}",
                        "--toggle-collect=tokio::runtime::context::runtime::enter_runtime*",
                        binary,
                        "--quick",
                        "--only",
                        args.workload,
                        "--engine",
                        args.engine,
                        "--runs",
                        str(runs),
                    ],
                    check=True,
                    capture_output=True,
                )
                with open(out_file) as f:
                    summary = re.search(r"^summary: (\d+)", f.read(), re.MULTILINE)
                if summary is None:
                    sys.exit(f"compare.py: callgrind wrote no summary for {binary}")
                counts.append(int(summary.group(1)))
        per_transition = (counts[1] - counts[0]) / (high - low) / transitions
        print(f"{args.workload} {args.engine} {binary}: {per_transition:,.0f} instructions a transition")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("clock", help="alternated runs, medians of the ratios to hand-written")
    c.add_argument("--rounds", type=int, default=5)
    c.add_argument("--args", default="", help="more wfc-bench arguments, e.g. \"--only count-loop-1000\"")
    c.add_argument("binaries", nargs="+")
    i = sub.add_parser("instructions", help="callgrind instructions a transition")
    i.add_argument("--workload", required=True)
    i.add_argument("--engine", required=True, help="compiled, compiled-express, interp or interp-express")
    i.add_argument("--runs", default="5,15", help="the two run counts, e.g. 20,60")
    i.add_argument("binaries", nargs="+")
    args = parser.parse_args()
    clock(args) if args.command == "clock" else instructions(args)


if __name__ == "__main__":
    main()
