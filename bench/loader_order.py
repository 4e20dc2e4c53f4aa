#!/usr/bin/env python3
"""Writes src/libkiln.order: the functions of libkiln that a process which
only loads cached images runs, for the linker to lay out together
(src/CMakeLists.txt says why).

It precompiles a small host unit into a scratch cache, as a root and as a
kernel library, and runs kiln-bench-first under callgrind: libkiln's start,
then open + load + lookup + call + close, and open + kiln_library_load +
lookups + close. Every libkiln function those runs execute is listed by its
mangled name. Both the precompile and the loads run under valgrind, so the
CPU the image was built for is the one the load checks against.

Run it for each build type whose code differs (function clones carry
optimization-dependent names) and give every output: the lists are merged.

    bench/loader_order.py --bin build-bench/bin --bin build/bin --work /tmp/order
"""

import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workloads  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(argv, **kw):
    p = subprocess.run(argv, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"loader_order: {' '.join(argv)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return p


def functions(profile, library):
    """libkiln's functions in a callgrind profile (--dump-instr=yes,
    --compress-strings=no, --compress-pos=no), each with its lowest address."""
    out, ob, fn_ob, fn = {}, None, None, None
    with open(profile) as f:
        for line in f:
            if line.startswith("ob="):
                ob = line[3:].strip()
            elif line.startswith("fn="):
                fn_ob, fn = ob, line[3:].strip()
            elif line.startswith("0x") and fn_ob and os.path.basename(fn_ob).startswith(library):
                addr = int(line.split()[0], 16)
                out[fn] = min(out.get(fn, addr), addr)
    # callgrind marks a recursive activation with 'N; unnamed code is skipped.
    return {name.split("'")[0]: a for name, a in out.items() if not name.startswith("0x")}


def profile_one(bindir, work):
    os.makedirs(work, exist_ok=True)
    path, entries = workloads.write_all(os.path.join(work, "ir"))["kernels_host_1.ll"]
    db = os.path.join(work, "order.db")
    for suffix in ("", "-wal", "-shm", "-images", "-loads"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    tool = lambda name: os.path.join(bindir, name)  # noqa: E731
    vg = ["valgrind", "-q", "--trace-children=yes", "--tool=none"]
    run(vg + [tool("kiln-precompile"), "--cache", db, "-q", "--library", "order", path])
    first = tool("kiln-bench-first")
    names = os.path.join(work, "names.txt")
    with open(names, "w") as f:
        f.write("\n".join(entries) + "\n")
    runs = [[first, "none"], [first, "call", db, entries[0]],
            [first, "library", db, "order", "@" + names]]
    for argv in runs:  # the first loads publish the images file
        run(["valgrind", "-q", "--tool=none"] + argv)
    found = {}
    for i, argv in enumerate(runs):
        out = os.path.join(work, f"callgrind.{i}")
        run(["valgrind", "--tool=callgrind", "--demangle=no", "--dump-instr=yes",
             "--compress-strings=no", "--compress-pos=no", f"--callgrind-out-file={out}"]
            + argv)
        for name, addr in functions(out, "libkiln.so").items():
            found.setdefault(name, addr)
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", required=True,
                    help="a build's bin directory (kiln-precompile, kiln-bench-first); repeatable")
    ap.add_argument("--work", required=True, help="scratch directory")
    ap.add_argument("--out", default=os.path.join(ROOT, "src", "libkiln.order"))
    a = ap.parse_args()
    if not shutil.which("valgrind"):
        sys.exit("loader_order: needs valgrind (callgrind)")
    order = []
    for i, bindir in enumerate(a.bin):
        # Each build's functions in its own address order, which keeps a
        # source file's functions together; a later build adds what is new.
        found = profile_one(os.path.abspath(bindir), os.path.join(a.work, str(i)))
        seen = set(order)
        order += [n for n, _ in sorted(found.items(), key=lambda kv: kv[1]) if n not in seen]
    with open(a.out, "w") as f:
        f.write("".join(n + "\n" for n in order))
    print(f"loader_order: {len(order)} functions -> {a.out}")


if __name__ == "__main__":
    main()
