#!/usr/bin/env python3
"""Kiln's benchmark harness: every figure is a ratio or a median measured side
by side in one run (the machines are shared and noisy), printed beside its
target. Writes results.json, results.md (the table) and results.png (cost
against workload size).

    bench/harness.py --bin BUILD/bin --work DIR --out bench/
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
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workloads  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Harness:
    def __init__(self, bindir, work, out, quick):
        self.bin = bindir
        self.work = work
        self.out = out
        self.quick = quick
        self.rows = []        # the table: one dict per figure
        self.raw = {}         # every measurement, for results.json
        self.started = time.monotonic()

    # --- running things -----------------------------------------------------
    def tool(self, name):
        path = os.path.join(self.bin, name)
        if not os.path.exists(path):
            sys.exit(f"harness: {path} is missing; build it first (bench/run does)")
        return path

    def run(self, argv, env=None, check=True):
        t0 = time.perf_counter()
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=env)
        ms = (time.perf_counter() - t0) * 1e3
        if check and p.returncode != 0:
            sys.exit(f"harness: {' '.join(argv)} failed ({p.returncode}):\n{p.stderr}")
        return p, ms

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
        self.rows.append({"item": item, "figure": figure, "value": value, "unit": unit,
                          "target": target_text, "met": met, "note": note})

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

    # 1, 2, 3: warm load, relink and cold compile; key cost; lookup.
    def load_vs_compile(self, files):
        cases = [(f"size_{s}", f"size_{s}.ll") for s in workloads.KERNEL_SIZES]
        cases += [(f"closure_{n}", f"closure_{n}.ll") for n in workloads.CLOSURE_SIZES]
        examples = [("example_deferred", os.path.join(ROOT, "examples", "deferred.ll"),
                     ["fib_calls"]),
                    ("example_kernels", os.path.join(ROOT, "examples", "kernels.ll"), ["apply"])]
        todo = [(name, *files[f]) for name, f in cases] + examples
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

        for name, r in res.items():
            ratio = r["cold_ms"] / r["warm_load_ms"]
            self.row(1, f"warm load vs cold compile, in process: {name} ({r['jobs']} jobs)",
                     ratio, "x", ">= 1000x", ratio >= 1000,
                     f"cold {r['cold_ms']:.1f} ms, warm {r['warm_load_ms'] * 1e3:.0f} us")
        for name, r in res.items():
            ratio = r["cold_proc_ms"] / r["warm_proc_ms"]
            self.row(1, f"warm load vs cold compile, fresh process: {name}", ratio, "x",
                     ">= 1000x", ratio >= 1000,
                     f"kiln-precompile {r['cold_proc_ms']:.1f} ms, load process "
                     f"{r['warm_proc_ms']:.2f} ms: open {r['warm_proc_open_ms']:.2f}, load "
                     f"{r['warm_proc_load_ms']:.2f}, close {r['warm_proc_close_ms']:.2f} ms")
        self.fsync_diagnosis(files, res)
        for name, r in res.items():
            ratio = r["cold_ms"] / r["relink_ms"]
            self.row(1, f"relink (image evicted) vs cold compile, in process: {name}", ratio,
                     "x", ">= 20x", ratio >= 20,
                     f"relink {r['relink_ms']:.2f} ms")
        for name, r in res.items():
            ratio = r["cold_proc_ms"] / r["relink_proc_ms"]
            self.row(1, f"relink vs cold compile, fresh process: {name}", ratio, "x", ">= 20x",
                     ratio >= 20, f"relink process {r['relink_proc_ms']:.1f} ms")
        for name, r in res.items():
            pct = 100 * r["key_ms_sum"] / r["compile_ms_sum"]
            self.row(2, f"key (extract+hash+key) vs compile: {name}", pct, "%", "<= 3%",
                     pct <= 3, f"key {r['key_ms_sum'] * 1e3 / r['jobs']:.0f} us/job, compile "
                     f"{r['compile_ms_sum'] / r['jobs']:.2f} ms/job")
        for name in ("size_small", "closure_100"):
            r = res[name]
            self.row(3, f"kiln_image_lookup on a loaded image: {name}", r["lookup_ns"], "ns",
                     "<= 50 ns", r["lookup_ns"] <= 50)

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
            r = res[name]
            self.row(1, f"diagnosis, fsync off: warm load process {name}", warm, "ms", "(cause)",
                     None, f"{r['warm_proc_ms']:.1f} ms with fsync: ratio to cold would be "
                     f"{r['cold_proc_ms'] / warm:.0f}x")
            self.row(1, f"diagnosis, fsync off: relink process {name}", relink, "ms", "(cause)",
                     None, f"{r['relink_proc_ms']:.1f} ms with fsync: ratio to cold would be "
                     f"{r['cold_proc_ms'] / relink:.1f}x")
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
                 f"-j1 {r['j1_ms']:.0f} ms, -j2 {r['j2_ms']:.0f} ms; CPUs this process got "
                 f"during -j2: {r['j2_cpus']:.2f} of {os.cpu_count()}; load average before "
                 f"{self.load_before:.1f}")

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
            "roots": n, "cold_unit_ms": cold_unit, "hit_unit_ms": hit_unit,
            "hit_one_ms": hit_one, "process_start_ms": start, "breakdown_unit": bd,
            "breakdown_one": bd1, "ccache": cc}
        self.row(5, f"fully cached kiln-precompile, per kernel ({n}-root unit)", per_kernel,
                 "ms", "<= 0.5 ms", per_kernel <= 0.5,
                 f"whole run {hit_unit:.0f} ms: process start {start:.1f}, ingest "
                 f"{bd['ingest_ms']:.0f}, extract+hash {bd['plan_ms'] - bd['ingest_ms']:.0f}, "
                 f"store {bd['run_ms']:.0f} ms")
        if cc.get("skipped"):
            self.row(5, "kiln per kernel vs ccache hit per file", None, "", "<= 0.1",
                     None, "skipped: " + cc["skipped"])
        else:
            ratio = per_kernel / cc["hit_one_ms"]
            self.row(5, "kiln per kernel vs ccache direct-mode hit per file", ratio, "x",
                     "<= 0.1", ratio <= 0.1,
                     f"ccache hit {cc['hit_one_ms']:.2f} ms per 1-function file "
                     f"({cc['hit_unit_ms']:.2f} ms for the {n}-function file)")
            ratio1 = hit_one / cc["hit_one_ms"]
            self.row(5, "1-kernel unit: kiln-precompile hit vs ccache hit (whole process)",
                     ratio1, "x", "(context)", None,
                     f"kiln {hit_one:.1f} ms (process start {start:.1f} ms, ingest "
                     f"{bd1['ingest_ms']:.2f}, plan {bd1['plan_ms']:.2f}, store "
                     f"{bd1['run_ms']:.2f}) vs ccache {cc['hit_one_ms']:.2f} ms")

        self.log("storage")
        st = self.bench_json("stats", "--cache", db)
        self.raw["storage"] = st
        ratio = st["disk_bytes"] / st["raw_bytes"]
        with sqlite3.connect(db) as c:
            features = c.execute("SELECT coalesce(sum(length(features)), 0) FROM targets").fetchone()[0]
        st["features_bytes"] = features
        self.row(6, "cache file bytes vs raw artifact+image bytes (every workload)", ratio, "x",
                 "<= 0.35x", ratio <= 0.35,
                 f"{st['disk_bytes'] / 1e6:.2f} MB file, {st['stored_bytes'] / 1e6:.2f} MB "
                 f"blobs, {st['raw_bytes'] / 1e6:.2f} MB raw, {st['jobs']} jobs, "
                 f"{st['images']} images; CPU feature strings in job rows "
                 f"{features / 1e6:.2f} MB")
        big = self.cache("proc_closure_100")
        if os.path.exists(big):
            sb = self.bench_json("stats", "--cache", big)
            self.raw["storage_closure_100"] = sb
            rb = sb["disk_bytes"] / sb["raw_bytes"]
            self.row(6, "cache file bytes vs raw bytes (closure_100 alone)", rb, "x", "<= 0.35x",
                     rb <= 0.35, f"{sb['disk_bytes'] / 1e3:.0f} kB file, "
                     f"{sb['stored_bytes'] / 1e3:.0f} kB blobs, {sb['raw_bytes'] / 1e3:.0f} kB raw")
        jobs = 20000 if self.quick else 100000
        s = self.bench_json("store", "--work", os.path.join(self.work, "store"),
                            "--jobs", str(jobs), "--probes", "20000")
        self.raw["store_100k"] = s
        self.row(6, f"job lookup p50 at {jobs // 1000}k jobs", s["lookup_p50_us"], "us",
                 "(p99 target)", None, f"insert {s['insert_ms'] / jobs * 1e3:.0f} us/job")
        self.row(6, f"job lookup p99 at {jobs // 1000}k jobs", s["lookup_p99_us"], "us",
                 "<= 100 us", s["lookup_p99_us"] <= 100)

        self.log(f"time to load {n} kernels in a fresh process")
        names = os.path.join(self.work, "names.txt")
        with open(names, "w") as f:
            f.write("\n".join(unit_entries) + "\n")
        load = [self.tool("kiln-bench-load"), db, "@" + names]
        self.run(load)  # first touch of the file's pages
        wall, p = self.timed(load, 5)
        inner = json.loads(p.stdout)
        self.raw["load_1000"] = {"wall_ms": wall, **inner}
        self.row(7, f"open the cache and load {n} cached kernels (fresh process)",
                 inner["open_ms"] + inner["load_ms"], "ms", "<= 50 ms",
                 inner["open_ms"] + inner["load_ms"] <= 50,
                 f"open {inner['open_ms']:.2f} ms, load {inner['load_ms']:.1f} ms "
                 f"({inner['load_ms'] * 1e3 / n:.0f} us/kernel), whole process {wall:.1f} ms")

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
                 f"whole-unit clone" + ("" if p.returncode == 0 else "; " + p.stderr.strip()[:300]))

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
        for r in self.rows:
            met = "-" if r["met"] is None else ("yes" if r["met"] else "**MISSED**")
            lines.append(f"| {r['item']} | {r['figure']} | {self.fmt(r['value'], r['unit'])} | "
                         f"{r['target']} | {met} | {r['note']} |")
        return "\n".join(lines)

    def plot(self):
        res = self.raw.get("load_vs_compile", {})
        gp = shutil.which("gnuplot")
        data = os.path.join(self.work, "plot.dat")
        with open(data, "w") as f:
            f.write("# jobs cold_ms relink_ms warm_ms warm_proc_ms\n")
            for n in workloads.CLOSURE_SIZES:
                r = res[f"closure_{n}"]
                f.write(f"{n} {r['cold_ms']} {r['relink_ms']} {r['warm_load_ms']} "
                        f"{r['warm_proc_ms']}\n")
            f.write("\n\n# stages cold_ms relink_ms warm_ms warm_proc_ms\n")
            for s, stages in workloads.KERNEL_SIZES.items():
                r = res[f"size_{s}"]
                f.write(f"{stages} {r['cold_ms']} {r['relink_ms']} {r['warm_load_ms']} "
                        f"{r['warm_proc_ms']}\n")
        if not gp:
            return "skipped: gnuplot not installed"
        png = os.path.join(self.out, "results.png")
        script = f"""
set terminal pngcairo size 1200,500 font ',10' noenhanced
set output '{png}'
set multiplot layout 1,2 title 'Kiln: cost against workload size (median of repeats)'
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
unset multiplot
"""
        p = subprocess.run([gp], input=script, text=True, capture_output=True)
        if p.returncode != 0:
            # pngcairo may be missing from a gnuplot build; the plain png terminal is not.
            script = script.replace("pngcairo size 1200,500 font ',10'", "png size 1200,500")
            p = subprocess.run([gp], input=script, text=True, capture_output=True)
        return png if p.returncode == 0 else "gnuplot failed: " + p.stderr.strip()[:300]

    def write(self):
        elapsed = time.monotonic() - self.started
        md = self.table()
        missed = [r for r in self.rows if r["met"] is False]
        plot = self.plot()
        header = (f"Kiln benchmark results: {platform.machine()}, {os.cpu_count()} cpus, "
                  f"{time.strftime('%Y-%m-%d')}, harness {elapsed:.0f} s. Medians over repeats; "
                  f"ratios measured side by side in one run.\n\n")
        with open(os.path.join(self.out, "results.md"), "w") as f:
            f.write(header + md + "\n\n" +
                    f"{len(missed)} of {sum(r['met'] is not None for r in self.rows)} "
                    f"targets missed.\n")
        with open(os.path.join(self.out, "results.json"), "w") as f:
            json.dump({"machine": platform.machine(), "cpus": os.cpu_count(),
                       "harness_s": round(elapsed, 1), "rows": self.rows,
                       "measurements": self.raw,
                       "plot": os.path.basename(plot) if plot.endswith(".png") else plot},
                      f, indent=1)
        print()
        print(header + md)
        print(f"\n{len(missed)} target(s) missed; plot: {plot}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="directory with kiln-precompile and kiln-bench*")
    ap.add_argument("--work", required=True, help="scratch directory (caches, workloads)")
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)),
                    help="where results.{json,md,png} go (default: bench/)")
    ap.add_argument("--quick", action="store_true", help="fewer repeats, 20k-job store")
    ap.add_argument("--only", default="", help="comma-separated: load,parallel,cli,extract,gpu")
    a = ap.parse_args()
    h = Harness(os.path.abspath(a.bin), os.path.abspath(a.work), os.path.abspath(a.out), a.quick)
    os.makedirs(h.work, exist_ok=True)
    files = workloads.write_all(os.path.join(h.work, "ir"))
    only = set(filter(None, a.only.split(",")))
    if not only or "load" in only:
        h.load_vs_compile(files)
    if not only or "parallel" in only:
        h.parallel(files)
    if not only or "cli" in only:
        h.cached_cli(files)
    if not only or "extract" in only:
        h.extraction(files)
    if not only or "gpu" in only:
        h.gpu(files)
    if not only:
        h.write()
    else:
        print(h.table())
        print(json.dumps(h.raw, indent=1))


if __name__ == "__main__":
    main()
