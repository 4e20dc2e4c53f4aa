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

--check profiles one build the same way and fails, naming them, when a
function its loads run is missing from the order file (a rename, a new
function on the load path): the test suite runs it (layers.order_file), so
the file cannot drift from the code and slow start-up unnoticed. Names the
file lists that this build does not run are left alone: they may be another
build type's clones.

    bench/loader_order.py --check --bin build/bin --work /tmp/order
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


# Besides the rule below: the exception pool, which the C++ runtime sets up
# at start, the fault plan's state, which every C entry point reads, and the
# host loader's count of memory files (its function is inlined).
STARTUP_DATA = {"_ZN12_GLOBAL__N_114emergency_poolE", "_ZN4kiln5fault12_GLOBAL__N_17g_stateE",
                "_ZZN4kiln7runtime12_GLOBAL__N_114unique_fd_pathEimE5loads"}


def startup_data(bindir, functions):
    """The writable data a load writes, to share a page of .bss: the C++
    runtime's start-up writes (the guard variables of the standard facets'
    ids, which its initializers set, and the exception pool), and the
    function-local statics (and their guards) of the listed functions."""
    lib = os.path.join(os.path.dirname(bindir), "lib", "libkiln.so")
    p = run(["nm", "--defined-only", lib])
    listed = set(functions)
    out = []
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) != 3 or parts[1] not in "bBdD":
            continue
        name = parts[2]
        if name.startswith("_ZGVNSt") or name in STARTUP_DATA:
            out.append(name)
            continue
        # _ZZ<function>E<local> and its guard _ZGVZ<function>E<local>: the
        # function is _Z<function>, whose encoding ends where the local's
        # name begins; try each 'E' from the right.
        body = name[3:] if name.startswith("_ZZ") else name[5:] if name.startswith("_ZGVZ") else None
        if body is None:
            continue
        for i in range(len(body) - 1, 0, -1):
            if body[i] == "E" and "_Z" + body[:i] in listed:
                out.append(name)
                break
    return sorted(set(out), key=out.index)


def check(a):
    """0 when every function the build's loads run is in the order file."""
    if len(a.bin) != 1:
        return "loader_order: --check takes one --bin"
    found = profile_one(os.path.abspath(a.bin[0]), os.path.join(a.work, "check"))
    with open(a.out) as f:
        listed = {line.strip() for line in f if line.strip()}
    missing = [n for n, _ in sorted(found.items(), key=lambda kv: kv[1]) if n not in listed]
    print(f"loader_order: {len(found)} functions on the load path, {len(missing)} missing "
          f"from {a.out}")
    if not missing:
        return 0
    for n in missing:
        print("  missing:", n)
    return ("loader_order: the order file has drifted from the code; write it again with "
            "bench/loader_order.py --bin <Release build>/bin --bin <this build>/bin")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", required=True,
                    help="a build's bin directory (kiln-precompile, kiln-bench-first); repeatable")
    ap.add_argument("--work", required=True, help="scratch directory")
    ap.add_argument("--out", default=os.path.join(ROOT, "src", "libkiln.order"))
    ap.add_argument("--check", action="store_true",
                    help="compare one build's load path with --out instead of writing it")
    a = ap.parse_args()
    if not shutil.which("valgrind"):
        sys.exit("loader_order: needs valgrind (callgrind)")
    if a.check:
        sys.exit(check(a))
    order = []
    for i, bindir in enumerate(a.bin):
        # Each build's functions in its own address order, which keeps a
        # source file's functions together; a later build adds what is new.
        found = profile_one(os.path.abspath(bindir), os.path.join(a.work, str(i)))
        seen = set(order)
        order += [n for n, _ in sorted(found.items(), key=lambda kv: kv[1]) if n not in seen]
    data = startup_data(os.path.abspath(a.bin[0]), order)
    with open(a.out, "w") as f:
        f.write("".join(n + "\n" for n in order + data))
    print(f"loader_order: {len(order)} functions, {len(data)} data -> {a.out}")


if __name__ == "__main__":
    main()
