#!/usr/bin/env python3
"""Small files against the toolchain: one-kernel and ten-kernel units for
sm_90, gfx942 and the host, each precompiled by kiln-precompile into a cold
(new) cache, beside the hand pipeline on the same IR (harness.py's
`hand_pipeline`: opt -O2, llc, then ptxas -c for sm_90, ld.lld -shared for
gfx942 and the host), one after the other in every repetition, so that both
see the same machine. Prints each median and ratio beside its target (at
most 0.9x the hand pipeline) and, with --write, puts the table into
bench/results.md (the section between the small-files markers).

    bench/small_files.py --bin BUILD/bin [--work DIR] [--reps 7] [--write]
    bench/small_files.py --bin BUILD/bin --before OTHER/bin   # two builds side by side

Python 3, standard library only. The workloads are workloads.py's
gpu_kernel_unit (instantiations of an element-wise kernel).
"""

import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workloads  # noqa: E402
from harness import Harness  # noqa: E402

TARGET_RATIO = 0.9
KERNEL_COUNTS = (1, 10)
BEGIN = "<!-- small_files.py: begin -->"
END = "<!-- small_files.py: end -->"


def precompile_argv(bindir, db, target, jobs, path):
    return [os.path.join(bindir, "kiln-precompile"), "--cache", db, "--target", target,
            "-j", str(jobs), "-q", path]


def run_all(h, builds, reps, jobs, targets, counts):
    """{(target, n): {"hand": [ms], build name: [ms]}}, each repetition
    timing every build and then the hand pipeline on the same file."""
    ir = os.path.join(h.work, "ir")
    os.makedirs(ir, exist_ok=True)
    out = {}
    for target in targets:
        for n in counts:
            path = os.path.join(ir, f"small_{target}_{n}.ll")
            with open(path, "w") as f:
                f.write(workloads.gpu_kernel_unit(target, n))
            r = {"hand": [], "hand_steps": []}
            h.log(f"{n}-kernel unit, {target}: x{reps}")
            for _ in range(reps):
                for name, bindir in builds:
                    db = h.cache(f"small_{name}_{target}_{n}")
                    h.drop(db)
                    _, ms = h.run(precompile_argv(bindir, db, target, jobs, path))
                    r.setdefault(name, []).append(ms)
                hp = h.hand_pipeline(target, path, jobs, os.path.join(h.work, "hand", target))
                if "skipped" in hp:
                    r["skipped"] = hp["skipped"]
                    break
                r["hand"].append(hp["total_ms"])
                r["hand_steps"].append(hp["steps"])
            out[(target, n)] = r
    return out


def rows_of(results, builds, jobs):
    rows = []
    for (target, n), r in results.items():
        figure = f"cold compile, {n}-kernel unit, {target}: kiln-precompile vs hand pipeline"
        if "skipped" in r:
            rows.append((figure, "-", f"<= {TARGET_RATIO}x", "-", f"skipped: {r['skipped']}"))
            continue
        hand = statistics.median(r["hand"])
        steps = " + ".join(
            f"{k} {statistics.median(s[k] for s in r['hand_steps']):.0f}"
            for k in r["hand_steps"][0])
        for name, _ in builds:
            k = statistics.median(r[name])
            ratio = k / hand
            per_rep = sorted(a / b for a, b in zip(r[name], r["hand"]))
            label = figure if name == "kiln" else f"{figure} ({name})"
            rows.append((label, f"{ratio:.2f}x", f"<= {TARGET_RATIO}x",
                         "yes" if ratio <= TARGET_RATIO else "**MISSED**",
                         f"kiln {k:.0f} ms, hand {hand:.0f} ms ({steps} ms); per repetition "
                         f"{per_rep[0]:.2f}-{per_rep[-1]:.2f}x; -j{jobs}, cold cache each "
                         f"time, whole processes; median of {len(r[name])}"))
    return rows


def table(rows):
    lines = ["| figure | measured | target | met | detail |", "|---|---|---|---|---|"]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def write_results(path, text):
    old = open(path).read() if os.path.exists(path) else ""
    block = f"{BEGIN}\n{text}\n{END}"
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + block + old[old.index(END) + len(END):]
    else:
        new = old.rstrip("\n") + "\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(new)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="directory with kiln-precompile")
    ap.add_argument("--before", default="",
                    help="another build's bin directory, timed beside --bin in every repetition")
    ap.add_argument("--before-name", default="before",
                    help="what the --before rows are called (default: before)")
    ap.add_argument("--note", default="", help="a sentence for results.md about this run")
    ap.add_argument("--work", default="", help="scratch directory (default: a new temporary one)")
    ap.add_argument("--reps", type=int, default=7, help="repetitions (default 7)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--targets", default="sm_90,gfx942,host")
    ap.add_argument("--write", action="store_true", help="put the table into bench/results.md")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="kiln-small-")
    os.makedirs(work, exist_ok=True)
    h = Harness(os.path.abspath(a.bin), os.path.abspath(work), os.path.abspath(work), True)
    builds = [("kiln", os.path.abspath(a.bin))]
    if a.before:
        builds.append((a.before_name, os.path.abspath(a.before)))
    targets = [t for t in a.targets.split(",") if t]
    results = run_all(h, builds, a.reps, a.jobs, targets, KERNEL_COUNTS)
    rows = rows_of(results, builds, a.jobs)
    text = table(rows)
    print(text)
    if a.write:
        import platform
        import time
        head = (f"## Small files (`bench/small_files.py`)\n\n{platform.machine()}, "
                f"{os.cpu_count()} cpus, {time.strftime('%Y-%m-%d')}. One- and ten-kernel units "
                f"(workloads.py `gpu_kernel_unit`) through kiln-precompile into a new cache, "
                f"beside the hand pipeline (harness.py `hand_pipeline`) in every repetition; "
                f"medians." + (f" {a.note}" if a.note else "") + "\n")
        write_results(os.path.join(os.path.dirname(os.path.abspath(__file__)), "results.md"),
                      head + "\n" + text)


if __name__ == "__main__":
    main()
