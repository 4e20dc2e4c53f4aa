#!/usr/bin/env python3
"""Kiln's benchmark harness: every figure is a ratio or a median measured side
by side in one run (the machines are shared and noisy), printed beside its
target. Writes results.json, results.md (the table) and results.png (cost
against workload size).

    bench/harness.py --bin BUILD/bin --work DIR --out bench/
    bench/harness.py --bin BUILD/bin --work DIR --only load --merge
    bench/harness.py --render          # results.md again from results.json

results.md opens with the floors: each figure that has one as a ratio to the
same work done without Kiln. Its summary counts live targets only; RETIRED
lists the targets the project no longer aims for, and why.
"""

import argparse
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workloads  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Targets held by a row and by the floors section both.
WARM_VS_DLOPEN = 1.5     # in-process warm load against dlopen of the same image
FRESH_CPU = 1.8          # a fresh process that loads and calls, against a bare one
FRESH_WALL = 2.0
COLD_GPU = 1.2           # cold compile against the hand pipeline, an image per kernel
COLD_HOST = 1.0
COLD_LIBRARY = 1.0       # the same with --library (one image of every kernel)

# Targets the project no longer aims for: not rows of the table, not counted
# in its summary; results.md lists them, with their figures from the same
# measurements, under "Retired targets". `figure` is the row's old text
# (rows of an older results.json that begin with it are left out).
RETIRED = [
    {"figure": "warm load (first after open) vs cold compile, in process",
     "target": ">= 1000x", "key": ("cold_ms", "first_load_ms"),
     "why": "A ratio that improves when the compiler gets slower says nothing of the load. "
            "A small kernel compiles in 30-60 ms, so 1000x asks for a first load under "
            "one dlopen of the same image: below the floor. The load is held to its "
            "floor instead (warm load vs dlopen)."},
    {"figure": "warm load vs cold compile, fresh process",
     "target": ">= 1000x", "key": ("cold_proc_ms", "warm_proc_ms"),
     "why": "The same ratio between whole processes: 1000x asks a process to start, open "
            "the cache and load in a thousandth of kiln-precompile's run, less than a bare "
            "process takes to start. Held to its floor instead (a fresh process vs a bare "
            "one)."},
    {"figure": "relink (image evicted) vs cold compile, in process",
     "target": ">= 20x", "key": ("cold_ms", "relink_ms"),
     "why": "A relink is a link and a load; how it compares with compiling depends on the "
            "compiler, not on Kiln. Its time is reported; its floor is measured between "
            "processes (relink vs an ld.lld process)."},
    {"figure": "relink vs cold compile, fresh process",
     "target": ">= 20x", "key": ("cold_proc_ms", "relink_proc_ms"),
     "why": "Most of a fresh relink is loading the linker (libLLVM), which any link pays: "
            "an ld.lld process of the same code costs about as much. Held to that floor "
            "instead (relink vs an ld.lld process)."},
]


class Harness:
    def __init__(self, bindir, work, out, quick):
        self.bin = bindir
        self.work = work
        self.out = out
        self.quick = quick
        self.rows = []        # the table: one dict per figure
        self.raw = {}         # every measurement, for results.json
        self.started = time.monotonic()
        self.chains = []      # deferred graph sizes (--chains, --cycles); default: workloads'
        self.cycles = []
        self.link_cycles = 1000  # cycles linked (one shared image) up to this size
        self.group = None     # the benchmark group running now, named in its rows
        self.meta = {"machine": platform.machine(), "cpus": os.cpu_count(),
                     "date": time.strftime("%Y-%m-%d"),
                     "load_average": round(os.getloadavg()[0], 1),
                     "build_type": self.build_type(bindir) if bindir else None}

    # --- running things -----------------------------------------------------
    def tool(self, name):
        path = os.path.join(self.bin, name)
        if not os.path.exists(path):
            sys.exit(f"harness: {path} is missing; build it first (bench/run does)")
        return path

    def llvm_tool(self, name):
        """An LLVM tool of the toolchain the build uses (LLVM_DIR in its
        CMake cache), else of `llvm-config`; None if not found."""
        if not hasattr(self, "_llvm_bin"):
            self._llvm_bin = None
            cache = os.path.join(os.path.dirname(self.bin), "CMakeCache.txt")
            if os.path.exists(cache):
                with open(cache) as f:
                    for line in f:
                        if line.startswith("LLVM_DIR:"):
                            d = os.path.normpath(os.path.join(line.split("=", 1)[1].strip(),
                                                              "..", "..", "..", "bin"))
                            if os.path.isdir(d):
                                self._llvm_bin = d
            if not self._llvm_bin:
                for cfg in ("llvm-config-22", "llvm-config"):
                    if shutil.which(cfg):
                        p = subprocess.run([cfg, "--bindir"], capture_output=True, text=True)
                        if p.returncode == 0:
                            self._llvm_bin = p.stdout.strip()
                            break
        path = os.path.join(self._llvm_bin or "", name)
        return path if self._llvm_bin and os.access(path, os.X_OK) else None

    @staticmethod
    def ptxas():
        """The CUDA toolkit's ptxas, found as Kiln finds it."""
        if "KILN_PTXAS" in os.environ:
            return os.environ["KILN_PTXAS"] or None
        for d in ([os.environ["CUDA_HOME"]] if os.environ.get("CUDA_HOME") else []) + \
                ["/usr/local/cuda"]:
            p = os.path.join(d, "bin", "ptxas")
            if os.access(p, os.X_OK):
                return p
        return shutil.which("ptxas")

    @staticmethod
    def files_of(db):
        """Bytes of a cache's files as they are on disk now: the database and
        any -wal / -shm / -journal left beside it, and Kiln's published host
        images (-images) and load log (-loads)."""
        out = {}
        for s in ("", "-wal", "-shm", "-journal", "-images", "-loads"):
            if os.path.exists(db + s):
                out[s or "db"] = os.path.getsize(db + s)
        return out

    @staticmethod
    def files_note(files):
        extra = [f"{k} {v:,} B" for k, v in files.items() if k != "db"]
        return "one file" if not extra else "also " + ", ".join(extra)

    def run(self, argv, env=None, check=True):
        t0 = time.perf_counter()
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=env)
        ms = (time.perf_counter() - t0) * 1e3
        if check and p.returncode != 0:
            sys.exit(f"harness: {' '.join(argv)} failed ({p.returncode}):\n{p.stderr}")
        return p, ms

    def cpu_ms(self, argv):
        """A child process's CPU time (user + system, from its rusage) in ms,
        and what it printed."""
        with tempfile.TemporaryFile() as out:
            p = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL)
            _, status, ru = os.wait4(p.pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit(f"harness: {' '.join(argv)} failed")
            out.seek(0)
            return (ru.ru_utime + ru.ru_stime) * 1e3, out.read().decode()

    def measure(self, argv, timeout_s):
        """A child process's wall time and peak resident memory (its own
        rusage, from wait4), and what it printed; rc None if it ran past
        timeout_s and was killed."""
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            t0 = time.perf_counter()
            p = subprocess.Popen(argv, stdout=out, stderr=err)
            deadline = t0 + timeout_s
            while True:
                pid, status, ru = os.wait4(p.pid, os.WNOHANG)
                if pid:
                    rc = os.waitstatus_to_exitcode(status)
                    break
                if time.perf_counter() > deadline:
                    p.kill()
                    _, _, ru = os.wait4(p.pid, 0)
                    rc = None
                    break
                time.sleep(0.05)
            p.returncode = -1 if rc is None else rc  # reaped here, not by Popen
            ms = (time.perf_counter() - t0) * 1e3
            out.seek(0)
            err.seek(0)
            return {"rc": rc, "ms": ms, "maxrss_kb": ru.ru_maxrss,
                    "stdout": out.read().decode(errors="replace"),
                    "stderr": err.read().decode(errors="replace")}

    def bench_json(self, *args):
        p, _ = self.run([self.tool("kiln-bench"), *args])
        return json.loads(p.stdout)

    def timed(self, argv, repeats, prepare=None, env=None):
        """Median wall time of a fresh process, over `repeats` runs."""
        times = []
        last = None
        for _ in range(repeats):
            if prepare:
                prepare()
            last, ms = self.run(argv, env=env)
            times.append(ms)
        return statistics.median(times), last

    def log(self, msg):
        print(f"[{time.monotonic() - self.started:6.1f}s] {msg}", flush=True)

    # --- the table ----------------------------------------------------------
    def row(self, item, figure, value, unit, target_text, met, note=""):
        note = " ".join(str(note).split()).replace("|", "/")  # one table cell
        self.rows.append({"item": item, "figure": figure, "value": value, "unit": unit,
                          "target": target_text, "met": met, "note": note,
                          "group": self.group})

    # --- workloads ----------------------------------------------------------
    def cache(self, name):
        return os.path.join(self.work, name + ".db")

    @staticmethod
    def drop(db):
        for s in ("", "-wal", "-shm", "-journal"):
            if os.path.exists(db + s):
                os.remove(db + s)

    @staticmethod
    def evict_images(db):
        with sqlite3.connect(db, timeout=10) as c:
            c.execute("DELETE FROM images")

    def precompile(self, db, path, entries, extra=()):
        argv = [self.tool("kiln-precompile"), "--cache", db, "-q", *extra]
        for e in entries:
            argv += ["--entry", e]
        return argv + [path]

    @staticmethod
    def load_workloads(files):
        """The workloads of the load and relink groups: (name, path, entries)."""
        cases = [(f"size_{s}", f"size_{s}.ll") for s in workloads.KERNEL_SIZES]
        cases += [(f"closure_{n}", f"closure_{n}.ll") for n in workloads.CLOSURE_SIZES]
        examples = [("example_deferred", os.path.join(ROOT, "examples", "deferred.ll"),
                     ["fib_calls"]),
                    ("example_kernels", os.path.join(ROOT, "examples", "kernels.ll"), ["apply"])]
        return [(name, *files[f]) for name, f in cases] + examples

    # 1, 2, 3: warm load against dlopen; cold compile, relink and warm load
    # side by side; key cost; lookup.
    def load_vs_compile(self, files):
        todo = self.load_workloads(files)
        reps = 3
        res = {}
        for name, path, entries in todo:
            self.log(f"load vs compile: {name}")
            args = ["inproc", "--ir", path, "--work", os.path.join(self.work, "inproc"),
                    "--repeats", str(reps)]
            for e in entries[:1]:
                args += ["--entry", e]
            r = self.bench_json(*args)
            # Process level: a fresh kiln-precompile from IR vs a fresh
            # process that opens the cache and loads.
            db = self.cache("proc_" + name)
            cold_proc, _ = self.timed(self.precompile(db, path, entries[:1]), reps,
                                      prepare=lambda: self.drop(db))
            load = [self.tool("kiln-bench-load"), db, entries[0]]
            warm_proc, p = self.timed(load, 11 if not self.quick else 3)
            inner = json.loads(p.stdout)
            relink_proc, _ = self.timed(load, reps, prepare=lambda: self.evict_images(db))
            r.update({"cold_proc_ms": cold_proc, "warm_proc_ms": warm_proc,
                      "relink_proc_ms": relink_proc, "warm_proc_inner_ms": inner["main_ms"],
                      "warm_proc_open_ms": inner["open_ms"], "warm_proc_load_ms": inner["load_ms"],
                      "warm_proc_close_ms": inner["close_ms"]})
            res[name] = r
        self.raw["load_vs_compile"] = res
        self.fsync_diagnosis(files, res)
        self.rows_load()

    # 1: a fresh relink against its floor, an ld.lld process linking the
    # same code. (lld's own --time-trace of that process is no floor for a
    # relink in a warm process: it counts the first touches of libLLVM's
    # code, 7-19 ms for a 1.6 kB object against Kiln's whole in-process
    # relink of 2-3 ms.)
    def relink(self, files):
        opt, llc, lld = (self.llvm_tool(t) for t in ("opt", "llc", "ld.lld"))
        if not (opt and llc and lld):
            self.row(1, "relink vs an ld.lld process linking the same code", None, "",
                     "(floor)", None, "skipped: LLVM's opt, llc or ld.lld not found")
            return
        reps = 3 if self.quick else 7
        res = {}
        for name, path, entries in self.load_workloads(files):
            self.log(f"relink vs ld.lld: {name}")
            db = self.cache("relink_" + name)
            self.drop(db)
            p, _ = self.run(self.precompile(db, path, entries[:1], ["--json"]))
            jobs = len(json.loads(p.stdout)["jobs"])
            # By hand: the unit made into one object (opt -O2, llc
            # -relocation-model=pic; not timed), linked by ld.lld -shared on
            # one thread, as Kiln links a root.
            out = os.path.join(self.work, "hand_link", name)
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            bc, obj, so = (os.path.join(out, f) for f in ("unit.bc", "unit.o", "unit.so"))
            self.run([opt, "-O2", "-mcpu=native", path, "-o", bc])
            self.run([llc, "-O2", "-mcpu=native", "-filetype=obj", "-relocation-model=pic", bc,
                      "-o", obj])
            load = [self.tool("kiln-bench-load"), db, entries[0]]
            hand = [lld, "--threads=1", "-shared", obj, "-o", so]
            relinks, links = [], []
            for _ in range(reps):  # interleaved, so drift hits both alike
                self.evict_images(db)
                relinks.append(self.run(load)[1])
                links.append(self.run(hand)[1])
            res[name] = {"relink_proc_ms": statistics.median(relinks),
                         "ld_lld_proc_ms": statistics.median(links), "relink_runs": relinks,
                         "ld_lld_runs": links, "object_bytes": os.path.getsize(obj),
                         "repeats": reps, "jobs": jobs}
        self.raw["relink_floor"] = res
        self.rows_relink()

    def rows_relink(self):
        """The relink group's rows, from its measurements alone. No target
        is set: the figure is reported."""
        for name, r in self.raw.get("relink_floor", {}).items():
            jobs = f"; {r['jobs']} jobs, an object each" if r.get("jobs") else ""
            self.row(1, f"relink vs an ld.lld process linking the same code, fresh process: "
                     f"{name}", r["relink_proc_ms"] / r["ld_lld_proc_ms"], "x", "(floor)",
                     None, f"relink process {r['relink_proc_ms']:.1f} ms (open, link the "
                     f"evicted image again, load, close){jobs}; ld.lld -shared --threads=1 of "
                     f"one object of the unit {r['ld_lld_proc_ms']:.1f} ms; interleaved, median "
                     f"of {r['repeats']}")

    def rows_load(self):
        """The load group's rows, from its measurements alone (so that
        --render can make them again from results.json)."""
        res = self.raw.get("load_vs_compile", {})
        # A warm load beside the floor of any load: the same image dlopened
        # from a file, as often, in the same process.
        for name, r in res.items():
            if not r.get("dlopen_ms"):
                continue
            ratio = r["warm_load_ms"] / r["dlopen_ms"]
            self.row(1, f"warm load vs dlopen of the same image, in process: {name}", ratio,
                     "x", f"<= {WARM_VS_DLOPEN}x", ratio <= WARM_VS_DLOPEN,
                     f"kiln_image_load median {r['warm_load_ms'] * 1e3:.0f} us (best "
                     f"{r['warm_load_best_ms'] * 1e3:.0f}), dlopen of the image as a file median "
                     f"{r['dlopen_ms'] * 1e3:.0f} us (best {r['dlopen_best_ms'] * 1e3:.0f}); "
                     f"200 of each, every image released or closed before the next")
        # Cold compile, relink and warm load of each workload side by side:
        # what a stored image saves, reported without a target (the ratios
        # were targets once: "Retired targets" in results.md).
        for name, r in res.items():
            first, med = r["first_load_ms"], r["warm_load_ms"]
            self.row(1, f"cold compile, relink and warm load: {name} ({r['jobs']} jobs)",
                     r["cold_ms"], "ms", "(report)", None,
                     f"in process: cold {r['cold_ms']:.1f} ms, relink {r['relink_ms']:.2f} ms, "
                     f"first load after open {first * 1e3:.0f} us, 200 more median "
                     f"{med * 1e3:.0f} us; fresh processes: kiln-precompile "
                     f"{r['cold_proc_ms']:.1f} ms, relink {r['relink_proc_ms']:.1f} ms, load "
                     f"{r['warm_proc_ms']:.2f} ms (open {r['warm_proc_open_ms']:.2f}, first "
                     f"load {r['warm_proc_load_ms']:.2f}, close {r['warm_proc_close_ms']:.2f} "
                     f"ms)")
        for name, d in self.raw.get("fsync_off", {}).items():
            r = res[name]
            self.row(1, f"diagnosis, fsync off: warm load process {name}", d["warm_proc_ms"],
                     "ms", "(cause)", None, f"{r['warm_proc_ms']:.1f} ms with fsync")
            self.row(1, f"diagnosis, fsync off: relink process {name}", d["relink_proc_ms"],
                     "ms", "(cause)", None, f"{r['relink_proc_ms']:.1f} ms with fsync")
        # Key cost as every request that misses the memo pays it: the unit
        # ingested (parsed and linked), then each job extracted, hashed, keyed.
        for name, r in res.items():
            key = r["ingest_ms"] + r["key_ms_sum"]
            pct = 100 * key / r["compile_ms_sum"]
            j = r["jobs"]
            self.row(2, f"key (ingest + extract + hash + key) vs compile: {name}", pct, "%",
                     "<= 3%", pct <= 3,
                     f"key {key * 1e3 / j:.0f} us/job (ingest {r['ingest_ms'] * 1e3 / j:.0f} + "
                     f"extract/hash/key {r['key_ms_sum'] * 1e3 / j:.0f}), compile "
                     f"{r['compile_ms_sum'] / j:.2f} ms/job")
        for name in ("size_small", "closure_100"):
            if name in res:
                r = res[name]
                self.row(3, f"kiln_image_lookup on a loaded image: {name}", r["lookup_ns"],
                         "ns", "<= 50 ns", r["lookup_ns"] <= 50)

    def fsync_diagnosis(self, files, res):
        """The same process-level loads with fsync/fdatasync as no-ops: the
        difference is time spent waiting for the disk (a cause, not a figure
        of the product)."""
        shim = os.path.join(os.path.dirname(self.bin), "lib", "kiln-bench-nosync.so")
        if not os.path.exists(shim):
            shim = os.path.join(self.bin, "..", "bench", "kiln-bench-nosync.so")
        if not os.path.exists(shim):
            return
        env = dict(os.environ, LD_PRELOAD=os.path.abspath(shim))
        out = {}
        for name in ("size_small", "closure_100"):
            path, entries = files[f"{name}.ll"]
            db = self.cache("proc_" + name)
            load = [self.tool("kiln-bench-load"), db, entries[0]]
            warm, _ = self.timed(load, 5, env=env)
            relink, _ = self.timed(load, 3, prepare=lambda: self.evict_images(db), env=env)
            out[name] = {"warm_proc_ms": warm, "relink_proc_ms": relink}
        self.raw["fsync_off"] = out

    # 4: parallel precompile.
    def parallel(self, files):
        self.log("parallel precompile -j1 vs -j2")
        self.load_before = os.getloadavg()[0]
        path, entries = files["parallel.ll"]
        args = ["parallel", "--ir", path, "--work", os.path.join(self.work, "parallel"),
                "--repeats", "3"]
        for e in entries:
            args += ["--entry", e]
        r = self.bench_json(*args)
        self.raw["parallel"] = r
        ratio = r["j1_ms"] / r["j2_ms"]
        self.row(4, f"parallel precompile -j2 vs -j1 ({r['jobs']} independent jobs)", ratio, "x",
                 ">= 1.8x", ratio >= 1.8,
                 f"-j1 {r['j1_ms']:.0f} ms, -j2 {r['j2_ms']:.0f} ms; CPUs this process and its "
                 f"codegen workers got during -j2: {r['j2_cpus']:.2f} of {os.cpu_count()}; "
                 f"load average before {self.load_before:.1f}")

    # 5, 6, 7: one cache holding every workload; a fully cached CLI run; ccache.
    def cached_cli(self, files):
        db = self.cache("all")
        self.drop(db)
        unit_path, unit_entries = files[f"unit_{workloads.UNIT_ROOTS}.ll"]
        self.log(f"cold precompile of the {len(unit_entries)}-root unit")
        _, cold_unit = self.run(self.precompile(db, unit_path, []))
        for name in [f"size_{s}.ll" for s in workloads.KERNEL_SIZES] + \
                [f"closure_{n}.ll" for n in workloads.CLOSURE_SIZES] + ["unit_1.ll"]:
            path, entries = files[name]
            self.run(self.precompile(db, path, entries))
        self.run(self.precompile(db, os.path.join(ROOT, "examples", "deferred.ll"), []))
        self.run(self.precompile(db, os.path.join(ROOT, "examples", "kernels.ll"), []))

        self.log("fully cached kiln-precompile runs")
        n = len(unit_entries)
        p, _ = self.run(self.precompile(db, unit_path, [], ["--json"]))
        memo_hit = bool(json.loads(p.stdout).get("memo"))
        hit_unit, _ = self.timed(self.precompile(db, unit_path, []), 5)
        hit_one, _ = self.timed(self.precompile(db, *files["unit_1.ll"]), 11)
        start, _ = self.timed([self.tool("kiln-precompile"), "--help"], 11)
        bd = self.bench_json("breakdown", "--ir", unit_path, "--cache", db, "--repeats", "3")
        bd1 = self.bench_json("breakdown", "--ir", files["unit_1.ll"][0], "--cache", db,
                              "--entry", "u0", "--repeats", "5")

        self.log("ccache direct-mode hits")
        cc = self.ccache(files)
        per_kernel = hit_unit / n
        self.raw["cached_cli"] = {
            "roots": n, "cold_unit_ms": cold_unit, "hit_unit_ms": hit_unit, "memo_hit": memo_hit,
            "hit_one_ms": hit_one, "process_start_ms": start, "breakdown_unit": bd,
            "breakdown_one": bd1, "ccache": cc}
        self.row(5, f"fully cached kiln-precompile, per kernel ({n}-root unit)", per_kernel,
                 "ms", "<= 0.5 ms", per_kernel <= 0.5,
                 f"whole run {hit_unit:.0f} ms: process start {start:.1f}, ingest "
                 f"{bd['ingest_ms']:.0f}, extract+hash {bd['plan_ms'] - bd['ingest_ms']:.0f}, "
                 f"store {bd['run_ms']:.0f} ms")
        # Like for like: one whole process each, the same functions.
        if cc.get("skipped"):
            self.row(5, f"{n} functions, one process each: kiln-precompile hit vs ccache hit",
                     None, "", "(like for like)", None, "skipped: " + cc["skipped"])
        else:
            ratio = hit_unit / cc["hit_unit_ms"]
            self.row(5, f"{n} functions, one process each: kiln-precompile "
                     f"{'memo ' if memo_hit else ''}hit vs ccache direct-mode hit", ratio, "x",
                     "(like for like)", None,
                     f"kiln {hit_unit:.1f} ms per process, {hit_unit * 1e3 / n:.1f} us per "
                     f"function ({n}-root unit); ccache {cc['hit_unit_ms']:.2f} ms per process, "
                     f"{cc['hit_unit_ms'] * 1e3 / n:.2f} us per function ({n}-function C file, "
                     f"gcc -O2 -c)")
            ratio1 = hit_one / cc["hit_one_ms"]
            self.row(5, "1-kernel unit: kiln-precompile hit vs ccache hit (whole process)",
                     ratio1, "x", "(context)", None,
                     f"kiln {hit_one:.1f} ms (process start {start:.1f} ms, ingest "
                     f"{bd1['ingest_ms']:.2f}, plan {bd1['plan_ms']:.2f}, store "
                     f"{bd1['run_ms']:.2f}) vs ccache {cc['hit_one_ms']:.2f} ms")

        self.log("storage")
        st, files_all = self.cache_stats(db)
        ratio = sum(files_all.values()) / st["raw_bytes"]
        with sqlite3.connect(db) as c:
            features = c.execute("SELECT coalesce(sum(length(features)), 0) FROM targets").fetchone()[0]
        st["features_bytes"] = features
        self.row(6, "cache file bytes vs raw artifact+image bytes (every workload)", ratio, "x",
                 "<= 0.35x", ratio <= 0.35,
                 f"{sum(files_all.values()) / 1e6:.2f} MB on disk after the last writer closed "
                 f"({self.files_note(files_all)}), {st['stored_bytes'] / 1e6:.2f} MB "
                 f"blobs, {st['raw_bytes'] / 1e6:.2f} MB raw, {st['jobs']} jobs, "
                 f"{st['images']} images; CPU feature strings {features / 1e3:.1f} kB"
                 + self.space_note(st["space"]))
        self.dictionary_row(st, "every workload")
        big = self.cache("proc_closure_100")
        if os.path.exists(big):
            sb, files_b = self.cache_stats(big, "storage_closure_100")
            rb = sum(files_b.values()) / sb["raw_bytes"]
            self.row(6, "cache file bytes vs raw bytes (closure_100 alone)", rb, "x", "<= 0.35x",
                     rb <= 0.35, f"{sum(files_b.values()) / 1e3:.0f} kB on disk "
                     f"({self.files_note(files_b)}), {sb['stored_bytes'] / 1e3:.0f} kB blobs, "
                     f"{sb['raw_bytes'] / 1e3:.0f} kB raw" + self.space_note(sb["space"]))
        jobs = 20000 if self.quick else 100000
        s = self.bench_json("store", "--work", os.path.join(self.work, "store"),
                            "--jobs", str(jobs), "--probes", "20000")
        self.raw["store_100k"] = s
        self.row(6, f"job lookup p50 at {jobs // 1000}k jobs", s["lookup_p50_us"], "us",
                 "(p99 target)", None, f"insert {s['insert_ms'] / jobs * 1e3:.0f} us/job")
        self.row(6, f"job lookup p99 at {jobs // 1000}k jobs", s["lookup_p99_us"], "us",
                 "<= 100 us", s["lookup_p99_us"] <= 100)

        self.log(f"time to load {n} kernels in a fresh process")
        names = self.names_file(unit_entries)
        load = [self.tool("kiln-bench-load"), db, "@" + names]
        self.run(load)  # first touch of the file's pages
        runs = []
        for _ in range(5):
            p, wall = self.run(load)
            runs.append({"wall_ms": wall, **json.loads(p.stdout)})
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        self.raw["load_1000"] = {"median": med, "runs": runs}
        self.row(7, f"{n} separate kiln_image_load calls, fresh process (first after open)",
                 med["load_ms"], "ms", "<= 50 ms", med["load_ms"] <= 50,
                 f"{med['load_ms'] * 1e3 / n:.0f} us per load; open {med['open_ms']:.2f} ms, "
                 f"close {med['close_ms']:.2f} ms, whole process {med['wall_ms']:.1f} ms; "
                 f"descriptors held with every image loaded: {med['fds']:.0f}")
        self.dlopen_diagnosis(db, unit_entries, med["load_ms"])

    def dlopen_diagnosis(self, db, entries, load_ms):
        """What the dlopen calls alone cost a process loading this many
        images: one root's image written out, copied once per root (distinct
        files, as the loader's images are distinct objects), each dlopened
        by a bare process. The rest of a load is Kiln's own work."""
        src = os.path.join(self.work, "dlopen_image.so")
        p, _ = self.run([self.tool("kiln-inspect"), "--cache", db, "image", entries[0],
                         "--target", "host", "-o", src], check=False)
        if p.returncode != 0:
            return
        d = os.path.join(self.work, "dlopen_copies")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        paths = []
        for i in range(len(entries)):
            paths.append(os.path.join(d, f"image{i}.so"))
            shutil.copyfile(src, paths[-1])
        lst = self.names_file(paths, "paths")
        argv = [self.tool("kiln-bench-bare"), "@" + lst, "-"]
        self.run(argv)  # first touch of the copies' pages
        ms = statistics.median(json.loads(self.run(argv)[0].stdout)["dlopen_ms"]
                               for _ in range(5))
        self.raw["dlopen_1000"] = {"dlopen_ms": ms, "count": len(paths),
                                   "image_bytes": os.path.getsize(src)}
        self.row(7, f"diagnosis: {len(paths)} dlopen calls alone (copies of one image as "
                 f"files, bare process)", ms, "ms", "(cause)", None,
                 f"{ms * 1e3 / len(paths):.0f} us per dlopen of a {os.path.getsize(src):,}-byte "
                 f"image; Kiln's {len(paths)} loads {load_ms:.0f} ms: the rest, "
                 f"{load_ms - ms:.0f} ms ({(load_ms - ms) * 1e3 / len(paths):.0f} us per load), "
                 f"is Kiln's own (store reads, checks, the memfd)")

    def names_file(self, names, tag="names"):
        path = os.path.join(self.work, f"{tag}_{len(names)}.txt")
        with open(path, "w") as f:
            f.write("\n".join(names) + "\n")
        return path

    def cache_stats(self, db, key=None):
        """The cache's files as its last writer left them (measured before
        anything else opens it), then kiln-bench stats (which folds any WAL
        into the file) for blob and raw bytes."""
        files = self.files_of(db)
        st = self.bench_json("stats", "--cache", db)
        st["files_as_left"] = files
        st["space"] = self.space_of(db)
        self.raw[key or "storage"] = st
        return st, files

    def dictionary_row(self, st, what):
        """What the zstd dictionaries (trained per blob kind on the cache's
        own blobs) save against compressing each blob alone at the same level."""
        if not st.get("plain_zstd_bytes"):
            return
        ratio = st["blob_bytes"] / st["plain_zstd_bytes"]
        self.row(6, f"zstd dictionaries: stored blob bytes vs each blob compressed alone ({what})",
                 ratio, "x", "(measure)", None,
                 f"{st['blob_bytes'] / 1e3:.0f} kB as stored ({st['dict_blobs']} of "
                 f"{st['blobs']} blobs with a dictionary) vs {st['plain_zstd_bytes'] / 1e3:.0f} kB "
                 f"zstd-9 alone; raw {st['raw_bytes'] / 1e3:.0f} kB")

    @staticmethod
    def space_of(db):
        """Where the file's bytes are (SQLite's dbstat): blob tables, the
        rows and indexes around them, free pages. None without dbstat."""
        try:
            with sqlite3.connect(db) as c:
                tables = dict(c.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"))
                free = c.execute("PRAGMA freelist_count").fetchone()[0] * \
                    c.execute("PRAGMA page_size").fetchone()[0]
        except sqlite3.Error:
            return None
        blobs = sum(v for k, v in tables.items() if k in ("artifacts", "images", "dictionaries"))
        meta = {k: v for k, v in tables.items() if k not in ("artifacts", "images", "dictionaries")}
        return {"blob_tables": blobs, "other_tables": sum(meta.values()), "free": free,
                "largest_other": sorted(meta.items(), key=lambda kv: -kv[1])[:4],
                "tables": tables}

    @staticmethod
    def space_note(sp):
        if not sp:
            return ""
        top = ", ".join(f"{k} {v / 1e3:.0f}" for k, v in sp["largest_other"])
        return (f"; in the file: blob tables {sp['blob_tables'] / 1e3:.0f} kB, rows and indexes "
                f"{sp['other_tables'] / 1e3:.0f} kB ({top} kB), free pages "
                f"{sp['free'] / 1e3:.0f} kB")

    def ccache(self, files):
        ccache = shutil.which("ccache")
        cc = shutil.which("gcc") or shutil.which("cc")
        if not ccache or not cc:
            return {"skipped": "ccache or gcc not installed"}
        env = dict(os.environ, CCACHE_DIR=os.path.join(self.work, "ccache"), CCACHE_DIRECT="true")
        shutil.rmtree(env["CCACHE_DIR"], ignore_errors=True)
        out = {}
        for key, name in (("one", "unit_1.c"), ("unit", f"unit_{workloads.UNIT_ROOTS}.c")):
            src = files[name][0]
            obj = os.path.join(self.work, name + ".o")
            argv = [ccache, cc, "-O2", "-c", src, "-o", obj]
            _, miss = self.run(argv, env=env)  # the miss that fills the cache
            hit, _ = self.timed(argv, 11, env=env)
            out[f"miss_{key}_ms"] = miss
            out[f"hit_{key}_ms"] = hit
        p, _ = self.run([ccache, "--print-stats"], env=env, check=False)
        for line in p.stdout.splitlines():
            k, _, v = line.partition("\t")
            if k in ("direct_cache_hit", "preprocessed_cache_hit", "cache_miss"):
                out[k] = int(v)
        return out

    # 9: cold compile by unit size, Kiln against the hand pipeline on the
    # same IR, side by side: GPU-shaped units of 1..1,000 kernels per target.
    HAND_WHAT = {
        "sm_90": "opt -O2, llc of the whole unit, ptxas -c: one relocatable cubin, not linked",
        "gfx942": "opt -O2, llc -filetype=obj, ld.lld -shared: one HSACO",
        "host": "opt -O2, llc -filetype=obj -relocation-model=pic, ld.lld -shared: one .so",
    }
    KILN_WHAT = {
        "sm_90": "PTX per job, assembled and linked per root by one in-process nvJitLink "
                 "call, roots linked in parallel",
        "gfx942": "optimized bitcode per job, one HSACO per root (IR link, codegen, lld)",
        "host": "an object per job, one .so linked per root (lld)",
    }

    def hand_pipeline(self, target, path, jobs, outdir):
        """The same work done by hand with LLVM's tools (and the toolkit's
        ptxas); returns the wall time of each step, or {"skipped": why}."""
        opt, llc, lld = (self.llvm_tool(t) for t in ("opt", "llc", "ld.lld"))
        if not (opt and llc and lld):
            return {"skipped": "LLVM's opt, llc or ld.lld not found"}
        ptxas = self.ptxas() if target == "sm_90" else None
        if target == "sm_90" and not ptxas:
            return {"skipped": "no ptxas (CUDA toolkit) found"}
        shutil.rmtree(outdir, ignore_errors=True)
        os.makedirs(outdir)
        cpu = "native" if target == "host" else target
        bc = os.path.join(outdir, "unit.bc")
        steps = {}
        _, steps["opt"] = self.run([opt, "-O2", f"-mcpu={cpu}", path, "-o", bc])
        if target == "sm_90":
            ptx, cubin = os.path.join(outdir, "unit.ptx"), os.path.join(outdir, "unit.cubin")
            _, steps["llc"] = self.run([llc, "-O2", f"-mcpu={cpu}", bc, "-o", ptx])
            split = ["--split-compile", str(jobs)] if jobs > 1 else []
            _, steps["ptxas"] = self.run([ptxas, "-c", *split, f"-arch={cpu}", ptx, "-o", cubin])
            out = cubin
        else:
            obj, out = os.path.join(outdir, "unit.o"), os.path.join(outdir, "unit.so")
            pic = ["-relocation-model=pic"] if target == "host" else []
            _, steps["llc"] = self.run([llc, "-O2", f"-mcpu={cpu}", "-filetype=obj", *pic, bc,
                                        "-o", obj])
            _, steps["lld"] = self.run([lld, f"--threads={jobs}", "-shared", obj, "-o", out])
        return {"total_ms": sum(steps.values()), "steps": steps,
                "output_bytes": os.path.getsize(out)}

    def unit_sizes(self, files):
        jobs = os.cpu_count() or 1
        counts = [n for n in workloads.UNIT_KERNEL_COUNTS if not (self.quick and n >= 1000)]
        res = {}
        for n in counts:
            reps = 1 if n >= 1000 or (self.quick and n >= 200) else 2 if n >= 200 or \
                self.quick else 3
            for target in workloads.GPU_TARGETS:
                self.log(f"cold compile by unit size: {n} kernels, {target} (x{reps})")
                path, _ = files[f"kernels_{target}_{n}.ll"]
                db = self.cache(f"cold_{target}_{n}")
                kiln, hand, report = [], [], None
                for _ in range(reps):
                    # Side by side: Kiln, then the hand pipeline, each repeat.
                    self.drop(db)
                    p, ms = self.run([self.tool("kiln-precompile"), "--cache", db, "--target",
                                      target, "-j", str(jobs), "-q", "--json", path])
                    kiln.append(ms)
                    report = json.loads(p.stdout)
                    hand.append(self.hand_pipeline(target, path, jobs,
                                                   os.path.join(self.work, "hand", target)))
                r = {"kernels": n, "jobs": len(report["jobs"]),
                     "compiled": sum(j["status"] == "compiled" for j in report["jobs"]),
                     "images": sum(bool(rt.get("image")) for rt in report["roots"]),
                     "notes": sorted({rt["note"] for rt in report["roots"] if rt.get("note")}),
                     "kiln_ms": statistics.median(kiln), "kiln_runs": kiln, "repeats": reps,
                     "j": jobs}
                if "skipped" in hand[0]:
                    r["hand_skipped"] = hand[0]["skipped"]
                else:
                    r["hand_ms"] = statistics.median(h["total_ms"] for h in hand)
                    r["hand_steps"] = {k: statistics.median(h["steps"][k] for h in hand)
                                       for k in hand[0]["steps"]}
                    r["hand_output_bytes"] = hand[0]["output_bytes"]
                # The other shapes issue 21 names, once each, up to 200 kernels:
                # every kernel as one --library (one image of them all), and
                # one image per kernel at -j1 beside the hand pipeline at -j1.
                if n <= 200 and "hand_skipped" not in r:
                    self.drop(db)
                    p, r["library_ms"] = self.run(
                        [self.tool("kiln-precompile"), "--cache", db, "--target", target, "-j",
                         str(jobs), "-q", "--json", "--library", "bench", path])
                    lib = json.loads(p.stdout).get("libraries", [])
                    r["library_images"] = sum(bool(x.get("image")) for x in lib)
                    r["library_root_images"] = sum(
                        bool(rt.get("image")) for rt in json.loads(p.stdout)["roots"])
                    if jobs > 1:
                        self.drop(db)
                        _, r["kiln_j1_ms"] = self.run(
                            [self.tool("kiln-precompile"), "--cache", db, "--target", target,
                             "-j", "1", "-q", path])
                        h1 = self.hand_pipeline(target, path, 1,
                                                os.path.join(self.work, "hand", target))
                        r["hand_j1_ms"] = h1.get("total_ms")
                res[f"{target}_{n}"] = r
        # What Kiln's time is made of, on the 200-kernel units (10 with --quick):
        # in process, so without the process start and libLLVM's loading.
        split_n = 10 if self.quick else 200
        splits = {}
        for target in workloads.GPU_TARGETS:
            self.log(f"cold compile split: {split_n} kernels, {target}")
            path, _ = files[f"kernels_{target}_{split_n}.ll"]
            sp = self.bench_json("coldsplit", "--ir", path, "--target", target, "--jobs",
                                 str(jobs), "--work", os.path.join(self.work, "coldsplit"))
            # The same split as whole processes: kiln-precompile --no-link into
            # an empty cache, then a second run that only links the images.
            db = self.cache("coldsplit_proc")
            self.drop(db)
            argv = [self.tool("kiln-precompile"), "--cache", db, "--target", target, "-j",
                    str(jobs), "-q", path]
            _, sp["proc_nolink_ms"] = self.run(argv[:-1] + ["--no-link", path])
            _, sp["proc_link_only_ms"] = self.run(argv)
            splits[target] = sp
        self.raw["unit_sizes"] = {"runs": res, "split": splits, "split_kernels": split_n}

        def sec(ms):
            return f"{ms / 1e3:.2f} s" if ms >= 1000 else f"{ms:.0f} ms"

        for target in workloads.GPU_TARGETS:
            for n in counts:
                r = res[f"{target}_{n}"]
                what = (f"kiln: {r['compiled']} jobs compiled, {r['images']} images linked "
                        f"({self.KILN_WHAT[target]}), -j{jobs}, whole process")
                if r["notes"]:
                    what += "; note: " + "; ".join(r["notes"])[:160]
                if "hand_skipped" in r:
                    self.row(9, f"cold compile, {n}-kernel unit, {target}: kiln vs hand pipeline",
                             None, "", f"<= {COLD_HOST if target == 'host' else COLD_GPU}x",
                             None,
                             f"kiln {sec(r['kiln_ms'])}; hand pipeline skipped: "
                             f"{r['hand_skipped']}")
                    continue
                ratio = r["kiln_ms"] / r["hand_ms"]
                steps = " + ".join(f"{k} {sec(v)}" for k, v in r["hand_steps"].items())
                over = (r["kiln_ms"] - r["hand_ms"]) / max(r["jobs"], 1)
                # Issue 21: an image per kernel at most 1.2x on GPUs (the host
                # stays at 1.0x); a library at most 1.0x everywhere.
                limit = COLD_HOST if target == "host" else COLD_GPU
                self.row(9, f"cold compile, {n}-kernel unit, {target}: kiln vs hand pipeline",
                         ratio, "x", f"<= {limit}x", ratio <= limit,
                         f"kiln {sec(r['kiln_ms'])}, hand {sec(r['hand_ms'])} ({steps}; "
                         f"{self.HAND_WHAT[target]}); per-job overhead {over:+.1f} ms; {what}; "
                         f"median of {r['repeats']}")
                if "library_ms" in r:
                    lr = r["library_ms"] / r["hand_ms"]
                    self.row(9, f"cold compile, {n}-kernel unit, {target}: kiln --library vs "
                             f"hand pipeline", lr, "x", f"<= {COLD_LIBRARY}x",
                             lr <= COLD_LIBRARY,
                             f"kiln --library {sec(r['library_ms'])} ({r['library_images']} "
                             f"image linked, the library's, serving {r['library_root_images']} "
                             f"roots), hand "
                             f"{sec(r['hand_ms'])}; -j{jobs}; once")
                if r.get("kiln_j1_ms") and r.get("hand_j1_ms"):
                    r1 = r["kiln_j1_ms"] / r["hand_j1_ms"]
                    self.row(9, f"cold compile, {n}-kernel unit, {target}: kiln vs hand "
                             f"pipeline, -j1", r1, "x", f"<= {limit}x", r1 <= limit,
                             f"kiln -j1 {sec(r['kiln_j1_ms'])}, hand at -j1 (no split "
                             f"compile, one lld thread) {sec(r['hand_j1_ms'])}; once")
        for target, sp in splits.items():
            j = max(sp["jobs"], 1)
            self.row(9, f"diagnosis: kiln cold compile split, {split_n}-kernel unit, {target}: "
                     f"compile + store, wall per job", sp["compile_run_ms"] / j, "ms", "(cause)",
                     None, f"in process, -j{jobs}: ingest {sp['ingest_ms']:.0f} ms once; plan "
                     f"(ingest + extract + key) {sp['plan_ms']:.0f} ms; compile + store "
                     f"{sp['compile_run_ms']:.0f} ms (sum of job compile times "
                     f"{sp['compile_ms_sum']:.0f} ms = {sp['compile_ms_sum'] / j:.1f} ms/job); "
                     f"link {sp['images']} images {sp['link_run_ms']:.0f} ms "
                     f"({sp['link_run_ms'] / max(sp['images'], 1):.1f} ms/image); as whole "
                     f"processes: kiln-precompile --no-link {sec(sp['proc_nolink_ms'])}, then a "
                     f"run that only links the images {sec(sp['proc_link_only_ms'])}")

    # 6 (storage): the empty cache; a GPU-shaped cache of many PTX + cubin jobs.
    def storage(self, files):
        self.log("storage: empty cache, GPU-shaped cache")
        db = self.cache("empty")
        self.drop(db)
        self.run([self.tool("kiln-bench-first"), "create", db])
        empty = self.files_of(db)
        total = sum(empty.values())
        self.raw["empty_cache"] = empty
        self.row(6, "empty cache: bytes on disk (kiln_cache_open + close on a new path)",
                 total / 1024, "KiB", "<= 32 KiB", total <= 32 * 1024,
                 f"{total:,} B; {self.files_note(empty)}")

        # The largest sm_90 unit the cold-compile rows left, else 200 kernels.
        n = 1000 if os.path.exists(self.cache("cold_sm_90_1000")) else 200
        gdb = self.cache(f"cold_sm_90_{n}")
        if not os.path.exists(gdb):
            path, _ = files[f"kernels_sm_90_{n}.ll"]
            self.run([self.tool("kiln-precompile"), "--cache", gdb, "--target", "sm_90", "-q",
                      path])
        st, left = self.cache_stats(gdb, "storage_gpu")
        with sqlite3.connect(gdb) as c:
            formats = dict(c.execute("SELECT format, count(*) FROM artifacts GROUP BY format"))
        st["artifact_formats"] = formats
        ratio = sum(left.values()) / st["raw_bytes"]
        self.row(6, f"cache file bytes vs raw bytes, GPU-shaped ({n} kernels for sm_90)", ratio,
                 "x", "<= 0.25x", ratio <= 0.25,
                 f"{sum(left.values()) / 1e6:.2f} MB on disk after the writer closed "
                 f"({self.files_note(left)}), {st['stored_bytes'] / 1e6:.2f} MB blobs, "
                 f"{st['raw_bytes'] / 1e6:.2f} MB raw; {st['jobs']} jobs, artifacts "
                 + ", ".join(f"{v} {k}" for k, v in sorted(formats.items()))
                 + f", {st['images']} images" + self.space_note(st["space"]))
        self.dictionary_row(st, f"GPU-shaped, {n} kernels for sm_90")

    # 10: time to first kernel.
    def first_kernel(self, files):
        path, entries = files["kernels_host_1.ll"]
        entry = entries[0]
        self.log("time to first kernel: compile-or-load memo hit, in process")
        db = self.cache("first_hit")
        self.drop(db)
        reps = 300 if self.quick else 2000
        h = self.bench_json("hit", "--ir", path, "--entry", entry, "--cache", db,
                            "--repeats", str(reps))
        self.raw["first_hit"] = h
        us = h["hit_ms"] * 1e3
        self.row(10, "time to first kernel, in process: kiln_compile_or_load memo hit (C API)",
                 us, "us", "<= 80 us", us <= 80,
                 f"median of {reps} hits (image released after each); best "
                 f"{h['hit_best_ms'] * 1e3:.0f} us, p90 {h['hit_p90_ms'] * 1e3:.0f} us, first "
                 f"hit on the handle {h['first_hit_ms'] * 1e3:.0f} us; of which kiln_image_load "
                 f"alone {h['load_ms'] * 1e3:.0f} us (the rest: memo key over the "
                 f"{h['source_bytes']:,}-byte unit and the memo row)")

        self.log("time to first kernel: fresh process vs a bare C process")
        db = self.cache("first_proc")
        self.drop(db)
        self.run([self.tool("kiln-precompile"), "--cache", db, "-q", path])
        image = os.path.join(self.work, "first_image.so")
        self.run([self.tool("kiln-inspect"), "--cache", db, "image", entry, "--target", "host",
                  "-o", image])
        symbol = self.image_symbol(image)
        bare = [self.tool("kiln-bench-bare")]
        floor = bare + [image, symbol] if symbol else None
        none = [self.tool("kiln-bench-first"), "none"]
        call = [self.tool("kiln-bench-first"), "call", db, entry]
        # The CPU figure: the same steps with no timers and no output, so
        # it counts nothing of the benchmark program's own.
        run = [self.tool("kiln-bench-first"), "run", db, entry]
        libkiln_so = os.path.join(os.path.dirname(self.bin), "lib", "libkiln.so")
        dl_kiln = bare + [libkiln_so, "-"] if os.path.exists(libkiln_so) else None
        self.run(call)  # first touch of the file's pages
        reps = 7 if self.quick else 31
        t = {"bare": [], "floor": [], "none": [], "call": [], "dlopen_libkiln": []}
        inner, dl_image, dl_libkiln = [], [], []
        for _ in range(reps):  # interleaved, so drift hits all alike
            t["bare"].append(self.run(bare)[1])
            if floor:
                p, ms = self.run(floor)
                t["floor"].append(ms)
                dl_image.append(json.loads(p.stdout)["dlopen_ms"])
            if dl_kiln:
                p, ms = self.run(dl_kiln)
                t["dlopen_libkiln"].append(ms)
                dl_libkiln.append(json.loads(p.stdout)["dlopen_ms"])
            t["none"].append(self.run(none)[1])
            p, ms = self.run(call)
            t["call"].append(ms)
            inner.append(json.loads(p.stdout))
        med = {k: statistics.median(v) for k, v in t.items() if v}
        ins = {k: statistics.median(r[k] for r in inner) for k in inner[0] if k != "result"}
        cpuid = self.bench_json("cpuid")
        self.raw["first_process"] = {
            "median_ms": med, "inner_median_ms": ins, "runs": t, "symbol": symbol,
            "dlopen_image_ms": statistics.median(dl_image) if dl_image else None,
            "dlopen_libkiln_ms": statistics.median(dl_libkiln) if dl_libkiln else None,
            "cpuid": cpuid}
        ratio = med["call"] / med["bare"]
        libkiln = med["none"] - med["bare"]
        rest = med["call"] - med["none"] - ins["main_ms"]
        cpu = (f" (of which reading the CPU's features for the host check, {cpuid['entries']} "
               f"features: {cpuid.get('loader_ms', 0):.3f} ms from the C library's copy of the "
               f"leaves, {cpuid['read_ms']:.2f} ms with a cpuid for each of {cpuid['leaves']} "
               f"leaves)" if cpuid["entries"] else "")
        cpu_runs = {"bare": [], "call": []}
        for _ in range(reps * 3):  # interleaved, as above
            for k, argv in (("bare", bare), ("call", run)):
                cpu_runs[k].append(self.cpu_ms(argv)[0])
        cpu_med = {k: statistics.median(v) for k, v in cpu_runs.items()}
        self.raw["first_process"]["cpu_median_ms"] = cpu_med
        cpu_ratio = cpu_med["call"] / cpu_med["bare"]
        self.row(10, "time to first kernel, fresh process: open + load + call vs a bare C "
                 "process, CPU (user + system)", cpu_ratio, "x", f"<= {FRESH_CPU}x",
                 cpu_ratio <= FRESH_CPU,
                 f"{cpu_med['call']:.2f} ms vs {cpu_med['bare']:.2f} ms of CPU, median of "
                 f"{reps * 3} each (rusage of each child; kiln-bench-first run: open, load, "
                 f"look up, call, close, with no timers or output of its own)")
        self.row(10, "time to first kernel, fresh process: open + load + call vs a bare C "
                 "process, wall", ratio, "x", f"<= {FRESH_WALL:g}x", ratio <= FRESH_WALL,
                 f"{med['call']:.2f} ms vs {med['bare']:.2f} ms: process start and exit "
                 f"{med['bare']:.2f} (bare), loading libkiln and its libraries {libkiln:.2f}"
                 f", open {ins['open_ms']:.2f}, load {ins['load_ms']:.2f}{cpu}, lookup + "
                 f"call {ins['lookup_call_ms']:.3f}, close {ins['close_ms']:.2f}, the rest "
                 f"(exit with libkiln loaded) {rest:.2f} ms; median of {reps}")
        nm = shutil.which("nm") or self.llvm_tool("llvm-nm")
        if nm and os.path.exists(libkiln_so):
            p, _ = self.run([nm, "-D", "--defined-only", "--with-symbol-versions", libkiln_so],
                            check=False)
            syms = [line.split()[-1] for line in p.stdout.splitlines() if len(line.split()) == 3]
            syms = [s.replace("@@", "@") for s in syms]
            names = [s.split("@")[0] for s in syms if s.split("@")[0] != s.split("@")[-1]]
            version = {s.split("@")[0]: s.split("@")[-1] for s in syms}
            # Internal: a C++ symbol of namespace kiln outside the public API
            # (kiln::Cache, kiln::Image, kiln::admin, compiler.hpp's functions
            # libkiln defines: tests/abi/check_exports.py has the same list).
            public_cxx = ("_ZN4kiln5Cache", "_ZNK4kiln5Cache", "_ZN4kiln5Image", "_ZNK4kiln5Image",
                          "_ZN4kiln5admin", "_ZNK4kiln5admin", "_ZN4kiln17compile_on_demand",
                          "_ZN4kiln15job_status_name", "_ZN4kiln25must_hit_from_environment",
                          "_ZNK4kiln13CompileReport2ok")
            internal = [n for n in names if n.startswith(("_ZN4kiln", "_ZNK4kiln", "_ZN10kiln_"))
                        and not n.startswith(public_cxx)]
            private = [n for n in names if version[n].startswith("KILN_PRIVATE")]
            others = [n for n in names if not n.startswith(("kiln_", "_ZN4kiln", "_ZNK4kiln"))]
            self.row(10, "libkiln exported symbols of Kiln's internal namespaces (target: none)",
                     len(internal), "", "0", not internal,
                     f"{len(names)} exported: {len(names) - len(private)} of the public API "
                     f"(C, kiln::Cache, kiln::Image, kiln::admin and the structs' members), "
                     f"{len(private)} for libkiln-compiler ({', '.join(private) or 'none'}), "
                     f"{len(others)} others; libstdc++'s own symbols are not exported")
        if floor:
            self.row(10, "time to first kernel: floor (bare process dlopens the same image "
                     "from a file and calls it)", med["floor"] / med["bare"], "x", "(floor)",
                     None, f"{med['floor']:.2f} ms vs bare {med['bare']:.2f} ms (the dlopen "
                     f"{statistics.median(dl_image):.2f} ms): a process and one dlopen, what "
                     f"any hit pays; Kiln adds {med['call'] - med['floor']:.2f} ms over it")

    def image_symbol(self, image):
        """The one function an image of a one-kernel unit exports."""
        nm = self.llvm_tool("llvm-nm")
        if not nm:
            return None
        p, _ = self.run([nm, "-D", "--defined-only", image], check=False)
        syms = [line.split()[-1] for line in p.stdout.splitlines()
                if len(line.split()) == 3 and line.split()[1] == "T"]
        return syms[0] if len(syms) == 1 else None

    # 11: kernel library. Switched on when kiln-precompile has --library:
    # 1,000 roots precompiled as one library, then a fresh process opens the
    # cache, loads the library (kiln_library_load) and looks every root up.
    def kernel_library(self, files):
        figure = "open + kiln_library_load of a 1000-kernel library + 1000 lookups (fresh process)"
        p, _ = self.run([self.tool("kiln-precompile"), "--help"], check=False)
        if "--library" not in p.stdout:
            self.row(11, figure, None, "", "<= 20 ms", None,
                     "skipped: no --library in this build")
            return
        self.library_row(files, figure)

    def library_row(self, files, figure):
        self.log("kernel library: precompile 1000 roots as one, load in a fresh process")
        path, entries = files[f"unit_{workloads.UNIT_ROOTS}.ll"]
        name = f"bench{len(entries)}"
        db = self.cache("library")
        self.drop(db)
        p, cold = self.run([self.tool("kiln-precompile"), "--cache", db, "-q", "--library", name,
                            path], check=False)
        if p.returncode != 0:
            self.row(11, figure, None, "", "<= 20 ms", False,
                     f"kiln-precompile --library failed ({p.returncode}): "
                     f"{p.stderr.strip()[:200]}")
            return
        load = [self.tool("kiln-bench-first"), "library", db, name,
                "@" + self.names_file(entries)]
        p, _ = self.run(load, check=False)  # first touch of the file's pages
        if p.returncode != 0:
            self.row(11, figure, None, "", "<= 20 ms", False,
                     f"kiln-bench-first library failed ({p.returncode}): "
                     f"{p.stderr.strip()[:200]}")
            return
        runs = []
        for _ in range(3 if self.quick else 7):
            p, wall = self.run(load)
            runs.append({"wall_ms": wall, **json.loads(p.stdout)})
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        self.raw["library"] = {"precompile_ms": cold, "median": med, "runs": runs}
        total = med["open_ms"] + med["load_ms"] + med["lookup_ms"]
        self.row(11, figure, total, "ms", "<= 20 ms", total <= 20,
                 f"open {med['open_ms']:.2f} ms, kiln_library_load {med['load_ms']:.2f} ms, "
                 f"{med['roots']:.0f} lookups {med['lookup_ms']:.3f} ms, close "
                 f"{med['close_ms']:.2f} ms, whole process {med['wall_ms']:.1f} ms; descriptors "
                 f"held {med['fds']:.0f}; precompile --library {cold / 1e3:.1f} s")

    # Extraction: the O(job) path against the O(unit) whole-unit clone it
    # replaced, byte for byte, on every fixture, example and workload.
    def extraction(self, files):
        self.log("extraction: fast path vs whole-unit clone")
        data = os.path.join(ROOT, "tests", "data")
        irs = sorted(os.path.join(data, f) for f in os.listdir(data) if f.endswith(".ll")) \
            if os.path.isdir(data) else []
        irs += [os.path.join(ROOT, "examples", f) for f in ("deferred.ll", "kernels.ll")]
        bench_data = os.path.join(ROOT, "bench", "data")
        irs += sorted(os.path.join(bench_data, f) for f in os.listdir(bench_data)
                      if f.endswith(".ll"))
        irs += [files[f][0] for f in files if f.endswith(".ll") and f != "parallel.ll"]
        args = ["extract-check"]
        for f in irs:
            args += ["--ir", f]
        p, _ = self.run([self.tool("kiln-bench"), *args], check=False)
        try:
            r = json.loads(p.stdout)
        except json.JSONDecodeError:
            sys.exit(f"harness: extract-check failed:\n{p.stderr}")
        self.raw["extraction"] = r
        self.row("-", f"job modules: O(job) extraction = whole-unit clone, byte for byte "
                 f"({r['entries']} entries of {r['units']} units, with and without -g)",
                 r["mismatches"], "", "0 differ", r["mismatches"] == 0,
                 f"extraction {r['fast_ms']:.0f} ms vs {r['whole_unit_ms']:.0f} ms by "
                 f"whole-unit clone; {r.get('fallbacks', 0)} entries fell back to the whole-unit "
                 f"clone (units with ifuncs)"
                 + ("" if p.returncode == 0 else "; " + p.stderr.strip()[:300]))

    # 12: planning deferred graphs (chains with one root, cycles with every
    # function a root): linear in the graph, with progress on long plans.
    def graphs(self, files):
        chains = self.chains or [n for n in workloads.DEFERRED_CHAIN_DEPTHS
                                 if not (self.quick and n > 10000)]
        cycles = self.cycles or [n for n in workloads.DEFERRED_CYCLE_SIZES
                                 if not (self.quick and n > 300)]
        self.log(f"deferred graphs: writing chains {chains}, cycles {cycles}")
        g = workloads.write_graphs(os.path.join(self.work, "graphs"), chains, cycles)
        res = {}
        self.raw["graphs"] = res

        def plan_alone(name):
            """kiln-bench plan: ingest + discovery + every root's closure key, in
            process; the child's wall time and peak memory from outside."""
            path, entries = g[name]
            argv = [self.tool("kiln-bench"), "plan", "--ir", path]
            if len(entries) == 1:
                argv += ["--entry", entries[0]]
            m = self.measure(argv, 900)
            if m["rc"] != 0:
                return {"failed": "timed out (900 s)" if m["rc"] is None else
                        m["stderr"].strip()[:300]}
            r = json.loads(m["stdout"])
            r.update(wall_ms=m["ms"], child_maxrss_kb=m["maxrss_kb"])
            return r

        # Chains: planning alone, and the CLI up to the point where it would
        # compile (--must-hit on an empty cache refuses there), progress on.
        for n in chains:
            name = f"chain_{n}.ll"
            self.log(f"deferred chain {n} deep: plan")
            r = {"plan": plan_alone(name)}
            db = self.cache(f"chain_{n}")
            self.drop(db)
            path, entries = g[name]
            m = self.measure([self.tool("kiln-precompile"), "--cache", db, "--must-hit",
                              "--entry", entries[0], path], 600)
            self.drop(db)
            lines = [ln for ln in m["stderr"].splitlines() if ln.startswith("kiln: planning:")]
            r["cli"] = {"rc": m["rc"], "ms": m["ms"], "maxrss_kb": m["maxrss_kb"],
                        "progress_lines": len(lines), "last_progress": lines[-1] if lines else "",
                        "refused": "must-hit" in m["stderr"]}
            res[f"chain_{n}"] = r

        def plan_note(p):
            if "failed" in p:
                return "plan failed: " + p["failed"]
            return (f"{p['jobs']:,} jobs: plan {p['plan_ms'] / 1e3:.2f} s in process (closure keys "
                    f"{p['describe_ms'] / 1e3:.2f} s), peak {p['child_maxrss_kb'] / 1024:.0f} MB")

        base = res.get("chain_1000", {}).get("plan", {})
        for n in chains:
            p = res[f"chain_{n}"]["plan"]
            if n == 1000 or "failed" in p or "failed" in base:
                continue
            ratio = p["plan_ms"] / base["plan_ms"]
            target = "<= 7x" if n == 5000 else f"(report; linear is {n // 1000}x)"
            self.row(12, f"deferred chain: plan {n:,} deep vs 1,000 deep (one root)", ratio, "x",
                     target, ratio <= 7 if n == 5000 else None,
                     f"{plan_note(p)}; 1,000 deep: {base['plan_ms']:.0f} ms")
        for n in chains:
            c = res[f"chain_{n}"]["cli"]
            note = (f"kiln-precompile --must-hit on an empty cache (ingest, plan, lease and look "
                    f"up every job, refuse to compile): peak {c['maxrss_kb'] / 1024:.0f} MB; "
                    f"{c['progress_lines']} progress lines on stderr"
                    + (f", the last '{c['last_progress']}'" if c["last_progress"] else ""))
            if c["rc"] is None:
                note = "did not finish in 600 s; " + note
            elif not c["refused"]:
                note = f"exit {c['rc']} without the must-hit refusal; " + note
            if n == 100000:
                ok = c["rc"] is not None and c["refused"] and c["ms"] <= 300e3 and \
                    c["progress_lines"] > 0
                self.row(12, f"deferred chain {n:,} deep: planned by kiln-precompile, progress "
                         f"shown", c["ms"] / 1e3, "s", "<= 300 s, progress shown", ok, note)
            else:
                self.row(12, f"deferred chain {n:,} deep: planned by kiln-precompile",
                         c["ms"] / 1e3, "s", "(report)", None, note)

        # Cycles, every function a root: the precompile without images (plan,
        # compile, store, a closure per root), then with images, against a flat
        # unit of as many plain functions, each a root. Every root's closure
        # holds the whole cycle; the roots share one member set and one linked
        # image (schema 7), so neither grows as N^2. --link-cycles caps the
        # size linked.
        def precompile(kind, n, link):
            name = f"{kind}_{n}.ll"
            self.log(f"{kind} of {n}, every function a root: precompile"
                     + ("" if link else " --no-link"))
            db = self.cache(f"{kind}_{n}")
            self.drop(db)
            argv = [self.tool("kiln-precompile"), "--cache", db, "-q", "--json"]
            if not link:
                argv.append("--no-link")
            m = self.measure(argv + [g[name][0]], 1800)
            r = {"rc": m["rc"], "ms": m["ms"], "maxrss_kb": m["maxrss_kb"],
                 "files": self.files_of(db)}
            r["bytes"] = sum(r["files"].values())
            if m["rc"] == 0:
                rep_ = json.loads(m["stdout"])
                r["jobs"] = len(rep_["jobs"])
                r["images"] = sum(bool(rt.get("image")) for rt in rep_["roots"])
                r["space"] = self.space_of(db)
                # Roots with the same members share one linked image.
                try:
                    with sqlite3.connect(db) as c:
                        r["image_rows"] = c.execute("SELECT count(*) FROM images").fetchone()[0]
                        r["member_rows"] = c.execute(
                            "SELECT count(*) FROM member_sets").fetchone()[0]
                except sqlite3.Error:
                    pass
            else:
                r["error"] = "did not finish in 1800 s" if m["rc"] is None else \
                    m["stderr"].strip()[:300]
            self.drop(db)
            return r

        for n in cycles:
            row = {"plan": plan_alone(f"cycle_{n}.ll")}
            row["cycle_nolink"] = precompile("cycle", n, False)
            row["flat_nolink"] = precompile("flat", n, False)
            if n <= self.link_cycles:
                row["cycle"] = precompile("cycle", n, True)
                row["flat"] = precompile("flat", n, True)
            res[f"cycle_{n}"] = row
            target = "< 60 s" if n == 1000 else "(report)"
            cy, fl = row["cycle_nolink"], row["flat_nolink"]
            if cy["rc"] == 0:
                self.row(12, f"deferred cycle of {n:,}, every function a root: precompile "
                         f"--no-link", cy["ms"] / 1e3, "s", "(report)", None,
                         f"{cy['jobs']:,} jobs, {n:,} closures of {n:,} members "
                         f"({cy.get('member_rows', '?'):,} member rows); peak "
                         f"{cy['maxrss_kb'] / 1024:.0f} MB; {plan_note(row['plan'])}; flat "
                         f"unit of {n:,} functions {fl['ms'] / 1e3:.1f} s")
            else:
                self.row(12, f"deferred cycle of {n:,}, every function a root: precompile "
                         f"--no-link", None, "s", "(report)", False, cy["error"])
            if "cycle" in row and row["cycle"]["rc"] == 0:
                cy, fl = row["cycle"], row["flat"]
                self.row(12, f"deferred cycle of {n:,}, every function a root: precompile",
                         cy["ms"] / 1e3, "s", target, cy["ms"] <= 60e3 if n == 1000 else None,
                         f"{cy['jobs']:,} jobs, {cy['images']:,} roots served by "
                         f"{cy.get('image_rows', '?'):,} linked image(s) of {n:,} objects; "
                         f"peak {cy['maxrss_kb'] / 1024:.0f} MB; without images "
                         f"{row['cycle_nolink']['ms'] / 1e3:.1f} s; flat unit of {n:,} "
                         f"functions {fl['ms'] / 1e3:.1f} s")
            else:
                why = row["cycle"]["error"] if "cycle" in row else \
                    f"not run: images linked for cycles up to {self.link_cycles} (--link-cycles)"
                self.row(12, f"deferred cycle of {n:,}, every function a root: precompile",
                         None, "s", target, False if n == 1000 else None, why)
            # The cache: with images where they were linked, else without.
            linked = "cycle" in row and row["cycle"]["rc"] == 0
            cy, fl = (row["cycle"], row["flat"]) if linked else \
                (row["cycle_nolink"], row["flat_nolink"])
            if cy["rc"] == 0 and fl["rc"] == 0:
                ratio = cy["bytes"] / fl["bytes"]
                self.row(12, f"deferred cycle of {n:,}: cache bytes vs {n:,} plain functions "
                         f"(each a root)" + ("" if linked else ", no images"),
                         ratio, "x", "< 4x" if n == 1000 else "(report)",
                         ratio < 4 if n == 1000 else None,
                         f"{cy['bytes'] / 1e6:.1f} MB vs {fl['bytes'] / 1e6:.2f} MB: every "
                         f"root's closure reaches the whole cycle, and the roots share one "
                         f"member set ({cy.get('member_rows', '?'):,} rows) and "
                         f"{cy.get('image_rows', '?'):,} image(s)"
                         + self.space_note(cy.get("space")))

    # 8: GPU.
    def gpu(self, files):
        self.log("GPU")
        path, entries = files["gpu.ll"]
        p, _ = self.run([self.tool("kiln-bench-gpu"), "--ir", path, "--entry", entries[0],
                         "--work", os.path.join(self.work, "gpu")], check=False)
        try:
            r = json.loads(p.stdout)
        except json.JSONDecodeError:
            r = {"skipped": f"kiln-bench-gpu failed ({p.returncode}): {p.stderr.strip()[:200]}"}
        self.raw["gpu"] = r
        if "skipped" in r:
            self.row(8, "GPU: cubin load vs PTX JIT vs compile", None, "", "(report)", None,
                     "skipped: " + r["skipped"])
        else:
            self.row(8, f"GPU {r['target']}: cached cubin load (kiln_image_load)",
                     r["cubin_load_ms"], "ms", "(report)", None)
            self.row(8, "GPU: driver JIT of the PTX (JIT cache off) vs cubin load",
                     r["ptx_jit_ms"] / r["cubin_load_ms"], "x", "(report)", None,
                     f"JIT {r['ptx_jit_ms']:.2f} ms")
            self.row(8, "GPU: compile from IR vs cubin load",
                     r["compile_ms"] / r["cubin_load_ms"], "x", "(report)", None,
                     f"compile {r['compile_ms']:.1f} ms")

    # --- output -------------------------------------------------------------
    @staticmethod
    def fmt(v, unit):
        if v is None:
            return "-"
        if unit == "x":
            return f"{v:,.0f}x" if v >= 100 else f"{v:.2f}x"
        if unit == "%":
            return f"{v:.2f}%"
        return f"{v:.3g} {unit}" if v < 100 else f"{v:,.0f} {unit}"

    def table(self):
        lines = ["| # | figure | measured | target | met | detail |",
                 "|---|---|---|---|---|---|"]
        # By item (groups run in another order: storage needs the cold
        # compile's caches); within an item, as measured.
        order = sorted(range(len(self.rows)), key=lambda i: (
            (0, self.rows[i]["item"]) if isinstance(self.rows[i]["item"], int) else
            (1, 0) if self.rows[i]["item"] == "-" else (2, 0), i))
        for r in (self.rows[i] for i in order):
            met = "-" if r["met"] is None else ("yes" if r["met"] else "**MISSED**")
            lines.append(f"| {r['item']} | {r['figure']} | {self.fmt(r['value'], r['unit'])} | "
                         f"{r['target']} | {met} | {r['note']} |")
        return "\n".join(lines)

    @staticmethod
    def span(values):
        lo, hi = Harness.fmt(min(values), "x"), Harness.fmt(max(values), "x")
        return lo if lo == hi else f"{lo} to {hi}"

    @staticmethod
    def met_of(values, limit):
        met = sum(v <= limit for v in values)
        return ("yes" if met == len(values) else "**MISSED**") if len(values) == 1 else \
            f"{met} of {len(values)}" + ("" if met == len(values) else " (**MISSED**)")

    def floors(self):
        """The first section of results.md: each figure that has a floor, as a
        ratio to it, from the measurements alone. The rows below give each
        workload's figure and detail."""
        raw = self.raw
        out = []  # (figure, Kiln, floor, ratio, target, met)
        res = raw.get("load_vs_compile", {})
        warm = [r["warm_load_ms"] / r["dlopen_ms"] for r in res.values() if r.get("dlopen_ms")]
        if warm:
            out.append(("warm load, in process", "`kiln_image_load` of a stored image",
                        "`dlopen` of the same image from a file", f"{self.span(warm)} "
                        f"({len(warm)} workloads)", f"<= {WARM_VS_DLOPEN}x",
                        self.met_of(warm, WARM_VS_DLOPEN)))
        fp = raw.get("first_process")
        if fp and fp.get("cpu_median_ms"):
            cpu = fp["cpu_median_ms"]["call"] / fp["cpu_median_ms"]["bare"]
            out.append(("fresh process, CPU", "a process that opens the cache, loads a host "
                        "image, calls it and closes", "a bare C process that returns at once",
                        self.fmt(cpu, "x"), f"<= {FRESH_CPU}x", self.met_of([cpu], FRESH_CPU)))
        if fp and fp.get("median_ms"):
            med = fp["median_ms"]
            wall = med["call"] / med["bare"]
            out.append(("fresh process, wall", "the same", "the same bare process",
                        self.fmt(wall, "x"), f"<= {FRESH_WALL:g}x",
                        self.met_of([wall], FRESH_WALL)))
            if med.get("floor"):
                out.append(("fresh process against the least a hit costs", "the same",
                            "a bare process that dlopens the same image from a file and "
                            "calls it", self.fmt(med["call"] / med["floor"], "x"), "(report)",
                            "-"))
        if raw.get("load_1000") and raw.get("dlopen_1000"):
            r = raw["load_1000"]["median"]["load_ms"] / raw["dlopen_1000"]["dlopen_ms"]
            out.append(("1,000 first loads, fresh process", "1,000 `kiln_image_load` calls",
                        "1,000 `dlopen` calls of copies of one image, bare process",
                        self.fmt(r, "x"), "(report; item 7 holds the 50 ms target)", "-"))
        proc = [r["relink_proc_ms"] / r["ld_lld_proc_ms"]
                for r in raw.get("relink_floor", {}).values()]
        if proc:
            out.append(("relink, fresh process", "a process that opens the cache, links the "
                        "root's stored objects again (its image evicted), loads it and closes",
                        "an `ld.lld -shared` process linking the same code",
                        f"{self.span(proc)} ({len(proc)} workloads)", "(report; none set)",
                        "-"))
        runs = raw.get("unit_sizes", {}).get("runs", {})
        hand = {"sm_90": "`opt` + `llc` + `ptxas -c`", "gfx942": "`opt` + `llc` + `ld.lld`",
                "host": "`opt` + `llc` + `ld.lld`"}
        for library in (False, True):
            for target in workloads.GPU_TARGETS:
                rs = sorted((r for k, r in runs.items() if k.startswith(target + "_") and
                             r.get("hand_ms") and (not library or r.get("library_ms"))),
                            key=lambda r: r["kernels"])
                if not rs:
                    continue
                ratios = [(r["library_ms"] if library else r["kiln_ms"]) / r["hand_ms"]
                          for r in rs]
                limit = COLD_LIBRARY if library else COLD_HOST if target == "host" else \
                    COLD_GPU
                sizes = ", ".join(f"{r['kernels']:,}" for r in rs)
                out.append((f"cold compile, {target}" + (", `--library`" if library else ""),
                            "`kiln-precompile" + (" --library`" if library else "`") +
                            f" into an empty cache, -j{rs[0].get('j', '')}",
                            f"the hand pipeline on the same IR: {hand[target]}",
                            ", ".join(self.fmt(x, "x") for x in ratios) + f" ({sizes} kernels)",
                            f"<= {limit}x", self.met_of(ratios, limit)))
        if not out:
            return ""
        lines = ["## Floors", "",
                 "Each figure as a ratio to its floor: the same work done without Kiln, "
                 "measured beside it in the same run. The table below gives each workload's "
                 "figure and what it is made of.", "",
                 "| figure | Kiln | floor | ratio | target | met |", "|---|---|---|---|---|---|"]
        lines += [f"| {' | '.join(row)} |" for row in out]
        return "\n".join(lines)

    def live_rows(self):
        """Rows of the table: every row but those of a retired target (an
        older results.json still holds them)."""
        return [r for r in self.rows
                if not any(r["figure"].startswith(t["figure"]) for t in RETIRED)]

    def retired(self):
        res = self.raw.get("load_vs_compile", {})
        lines = ["## Retired targets", "",
                 "Targets the project no longer aims for: not in the table and not counted in "
                 "its summary. The times they compared are still measured (the \"cold "
                 "compile, relink and warm load\" rows); the ratios here are from them.", "",
                 "| retired target | was | why | this run |", "|---|---|---|---|"]
        for t in RETIRED:
            num, den = t["key"]
            ratios = [r[num] / r[den] for r in res.values() if r.get(num) and r.get(den)]
            now = (f"{self.span(ratios)} ({len(ratios)} workloads)" if ratios else "-")
            lines.append(f"| {t['figure']} | {t['target']} | {t['why']} | {now} |")
        return "\n".join(lines)

    @staticmethod
    def build_type(bindir):
        cache = os.path.join(os.path.dirname(bindir), "CMakeCache.txt")
        if os.path.exists(cache):
            with open(cache) as f:
                for line in f:
                    if line.startswith("CMAKE_BUILD_TYPE:"):
                        return line.split("=", 1)[1].strip() or None
        return None

    def plot(self):
        res = self.raw.get("load_vs_compile", {})
        units = self.raw.get("unit_sizes", {}).get("runs", {})
        gp = shutil.which("gnuplot")
        data = os.path.join(self.work, "plot.dat")
        targets = list(workloads.GPU_TARGETS)
        with open(data, "w") as f:
            f.write("# jobs cold_ms relink_ms warm_ms warm_proc_ms\n")
            for n in workloads.CLOSURE_SIZES:
                r = res.get(f"closure_{n}")
                if r:
                    f.write(f"{n} {r['cold_ms']} {r['relink_ms']} {r['warm_load_ms']} "
                            f"{r['warm_proc_ms']}\n")
            f.write("\n\n# stages cold_ms relink_ms warm_ms warm_proc_ms\n")
            for s, stages in workloads.KERNEL_SIZES.items():
                r = res.get(f"size_{s}")
                if r:
                    f.write(f"{stages} {r['cold_ms']} {r['relink_ms']} {r['warm_load_ms']} "
                            f"{r['warm_proc_ms']}\n")
            f.write("\n\n# kernels " + " ".join(f"kiln_{t} hand_{t}" for t in targets) + "\n")
            for n in workloads.UNIT_KERNEL_COUNTS:
                if not any(f"{t}_{n}" in units for t in targets):
                    continue
                cols = []
                for t in targets:
                    r = units.get(f"{t}_{n}", {})
                    cols += [str(r.get("kiln_ms", "NaN")), str(r.get("hand_ms", "NaN"))]
                f.write(f"{n} " + " ".join(cols) + "\n")
        if not gp:
            return "skipped: gnuplot not installed"
        if not res and not units:
            return "skipped: nothing to plot"
        png = os.path.join(self.out, "results.png")
        panels = 3 if units else 2
        unit_plot = ", \\\n     ".join(
            f"'' index 2 using 1:{2 + 2 * k} with linespoints lc {k + 1} title 'Kiln cold, {t}', "
            f"'' index 2 using 1:{3 + 2 * k} with linespoints lc {k + 1} dashtype 2 "
            f"title 'hand pipeline, {t}'"
            for k, t in enumerate(targets))
        script = f"""
set terminal pngcairo size {600 * panels},500 font ',10' noenhanced
set output '{png}'
set multiplot layout 1,{panels} title 'Kiln: cost against workload size (median of repeats)'
set logscale xy
set grid
set ylabel 'milliseconds'
set key top left
set format y '%g'
set xlabel 'jobs in the closure'
plot '{data}' index 0 using 1:2 with linespoints title 'cold compile from IR', \\
     '' index 0 using 1:3 with linespoints title 'relink (image evicted)', \\
     '' index 0 using 1:5 with linespoints title 'warm load, fresh process', \\
     '' index 0 using 1:4 with linespoints title 'warm load, in process'
set xlabel 'kernel size (stages; about 8 instructions each)'
plot '{data}' index 1 using 1:2 with linespoints title 'cold compile from IR', \\
     '' index 1 using 1:3 with linespoints title 'relink (image evicted)', \\
     '' index 1 using 1:5 with linespoints title 'warm load, fresh process', \\
     '' index 1 using 1:4 with linespoints title 'warm load, in process'
"""
        if units:
            script += f"""set xlabel 'kernels per unit (cold compile, whole process)'
plot '{data}' {unit_plot[3:]}
"""
        script += "unset multiplot\n"
        def gnuplot(text):
            return subprocess.run([gp], input=text.encode(), capture_output=True)
        p = gnuplot(script)
        if p.returncode != 0:
            # pngcairo may be missing from a gnuplot build; the plain png terminal is not.
            p = gnuplot(script.replace(f"pngcairo size {600 * panels},500 font ',10'",
                                       f"png size {600 * panels},500"))
        return png if p.returncode == 0 else \
            "gnuplot failed: " + p.stderr.decode(errors="replace").strip()[:300]

    # Sections other scripts put into results.md, between their markers;
    # a rewrite of the table keeps them.
    FOREIGN = ("<!-- fleet.py: begin -->", "<!-- small_files.py: begin -->")

    def write(self, plot=True):
        """results.json from the rows and measurements, then results.md from
        them (and results.png unless plot is False)."""
        plot = self.plot() if plot else self.meta.get("plot", "")
        self.meta["plot"] = os.path.basename(plot) if plot.endswith(".png") else plot
        with open(os.path.join(self.out, "results.json"), "w") as f:
            json.dump({**self.meta, "rows": self.rows, "measurements": self.raw}, f, indent=1)
        md = self.render()
        path = os.path.join(self.out, "results.md")
        tail = ""
        if os.path.exists(path):
            with open(path) as f:
                old = f.read()
            at = [old.index(m) for m in self.FOREIGN if m in old]
            tail = old[min(at):] if at else ""
        with open(path, "w") as f:
            f.write(md + ("\n\n" + tail if tail else ""))
        print()
        print(md)
        print(f"\nplot: {plot}")

    def render(self):
        m = self.meta
        header = (f"Kiln benchmark results: {m.get('machine')}, {m.get('cpus')} cpus, "
                  f"{m.get('date', '?')}, harness {m.get('harness_s', 0):.0f} s"
                  + (f", {m['build_type']} build" if m.get("build_type") else "") + ". "
                  "Medians over repeats; ratios measured side by side in one run.")
        later = {g: d for g, d in m.get("groups", {}).items() if d.get("date") != m.get("date")}
        if later:
            header += " Groups measured since, each in one run of its own: " + "; ".join(
                f"{g} on {d['date']} (" + ", ".join(
                    ([f"{d['build_type']} build"] if d.get("build_type") else []) +
                    ([f"load average {d['load_average']} at its start"]
                     if d.get("load_average") is not None else [])) + ")"
                for g, d in sorted(later.items())) + "."
        live = self.live_rows()
        targets = [r for r in live if r["met"] is not None]
        missed = [r for r in targets if r["met"] is False]
        summary = (f"{len(missed)} of {len(targets)} live targets missed ({len(RETIRED)} "
                   f"retired targets not counted: see the end).")
        rows, self.rows = self.rows, live
        table = self.table()
        self.rows = rows
        parts = [header, summary, self.floors(), "## Every figure", table, summary,
                 self.retired()]
        return "\n\n".join(p for p in parts if p)


def legacy_group(row):
    """The group that made a row of a results.json written before rows named
    their group."""
    item, figure = row["item"], row["figure"]
    if item == "!":
        return figure.split("'")[1] if "'" in figure else None
    if item == 6:
        return "storage" if "GPU-shaped" in figure or "empty cache" in figure else "cli"
    return {1: "load", 2: "load", 3: "load", 4: "parallel", 5: "cli", 7: "cli", 8: "gpu",
            9: "unitsize", 10: "first", 11: "library", 12: "graphs", "-": "extract"}.get(item)


def load_results(h, path):
    """Rows, measurements and run details of a results.json into h."""
    with open(path) as f:
        d = json.load(f)
    h.meta = {k: v for k, v in d.items() if k not in ("rows", "measurements")}
    if "date" not in h.meta:
        # Written before results.json kept its date: results.md's header has it.
        md = os.path.join(os.path.dirname(path), "results.md")
        if os.path.exists(md):
            with open(md) as f:
                words = f.readline().replace(",", " ").split()
            h.meta["date"] = next((w for w in words if w.count("-") == 2 and w[:4].isdigit()),
                                  None)
    h.raw = d["measurements"]
    h.rows = d["rows"]
    for r in h.rows:
        r.setdefault("group", legacy_group(r))
    # The load and relink groups' rows are made from their measurements, so
    # a render shows them as the harness makes them now.
    h.rows = [r for r in h.rows if r["group"] not in ("load", "relink")]
    h.group = "load"
    h.rows_load()
    h.group = "relink"
    h.rows_relink()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", help="directory with kiln-precompile and kiln-bench*")
    ap.add_argument("--work", help="scratch directory (caches, workloads)")
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)),
                    help="where results.{json,md,png} go (default: bench/)")
    ap.add_argument("--quick", action="store_true", help="fewer repeats, 20k-job store")
    groups = {"load": Harness.load_vs_compile, "relink": Harness.relink,
              "parallel": Harness.parallel,
              "cli": Harness.cached_cli, "unitsize": Harness.unit_sizes,
              "storage": Harness.storage, "first": Harness.first_kernel,
              "library": Harness.kernel_library, "extract": Harness.extraction,
              "graphs": Harness.graphs, "gpu": Harness.gpu}
    ap.add_argument("--only", default="", help="comma-separated: " + ",".join(groups))
    ap.add_argument("--render", action="store_true",
                    help="measure nothing: write results.md again from results.json (in --out)")
    ap.add_argument("--merge", action="store_true",
                    help="with --only: put the groups' new rows and measurements into "
                    "results.json in place of theirs, and write results.md")
    ap.add_argument("--chains", default="", help="graphs: chain depths (default: "
                    + ",".join(map(str, workloads.DEFERRED_CHAIN_DEPTHS)) + ")")
    ap.add_argument("--cycles", default="", help="graphs: cycle sizes (default: "
                    + ",".join(map(str, workloads.DEFERRED_CYCLE_SIZES)) + ")")
    ap.add_argument("--link-cycles", type=int, default=1000,
                    help="graphs: link images for cycles up to this size (default 1000; the "
                    "roots of a cycle share one image of its N objects)")
    a = ap.parse_args()
    out = os.path.abspath(a.out)
    results = os.path.join(out, "results.json")
    if a.render:
        h = Harness(None, None, out, a.quick)
        load_results(h, results)
        h.write(plot=False)
        return
    if not (a.bin and a.work):
        ap.error("--bin and --work are needed to measure (or --render)")
    if a.merge and not a.only:
        ap.error("--merge needs --only")
    h = Harness(os.path.abspath(a.bin), os.path.abspath(a.work), out, a.quick)
    h.chains = [int(n) for n in a.chains.split(",") if n]
    h.cycles = [int(n) for n in a.cycles.split(",") if n]
    h.link_cycles = a.link_cycles
    os.makedirs(h.work, exist_ok=True)
    os.makedirs(h.out, exist_ok=True)
    files = workloads.write_all(os.path.join(h.work, "ir"))
    only = set(filter(None, a.only.split(",")))
    if only - set(groups):
        sys.exit(f"harness: unknown --only group(s): {', '.join(sorted(only - set(groups)))}")
    for name, fn in groups.items():
        if only and name not in only:
            continue
        h.group = name
        # A group that fails is a row saying so; the other groups still run.
        try:
            fn(h, files)
        except (SystemExit, Exception) as e:  # noqa: BLE001
            msg = str(e) if not isinstance(e, SystemExit) else str(e.code)
            h.log(f"{name}: FAILED: {msg}")
            h.row("!", f"benchmark group '{name}' failed", None, "", "runs", False,
                  " ".join(msg.split())[:400])
    elapsed = time.monotonic() - h.started
    if a.merge:
        new_rows, new_raw, run = h.rows, h.raw, dict(h.meta)
        load_results(h, results)
        h.rows = [r for r in h.rows if r["group"] not in only] + new_rows
        h.raw.update(new_raw)
        h.meta.setdefault("groups", {}).update(
            {g: {"date": run["date"], "build_type": run["build_type"],
                 "load_average": run["load_average"], "harness_s": round(elapsed, 1)}
             for g in only})
        h.write()
    elif not only:
        h.meta["harness_s"] = round(elapsed, 1)
        h.write()
    else:
        print(h.table())
        print(json.dumps(h.raw, indent=1))


if __name__ == "__main__":
    main()
