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
    bench/small_files.py --bin BUILD/bin --sources tests/kernels/cuda tests/kernels/hip [--write]

Python 3, standard library only. The workloads are workloads.py's
gpu_kernel_unit (instantiations of an element-wise kernel).

--sources DIR|FILE ... times real code instead: every .cu and .hip file
(directories are searched recursively) is compiled to device-only LLVM IR
by clang-22 exactly as tests/kernels/check_suite.py compiles the real-kernel
suite (its clang_command: -O2, --cuda-device-only, sm_90 for .cu and gfx942
for .hip; -fgpu-rdc for the suite's rdc cases, and for any other file that
clang refuses without it), then kiln-precompile (new cache, -j) and the hand
pipeline run on that IR in every repetition (where the IR calls libdevice
or the ROCm device libraries, the hand pipeline links them in first with
llvm-link --only-needed --internalize, a timed step, as clang and Kiln do).
Prints each file's ratio, and
the median and the max over the files beside the targets (median at most
0.9x, no file above 1.5x). Files that clang (or the hand pipeline) cannot
compile are listed as skipped with the reason and not counted. With --write
the table goes into its own markers inside the small-files section, which
the generated-unit table keeps.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workloads  # noqa: E402
from harness import Harness  # noqa: E402

TARGET_RATIO = 0.9
TARGET_MAX = 1.5          # --sources: no file above this
KERNEL_COUNTS = (1, 10)
BEGIN = "<!-- small_files.py: begin -->"
END = "<!-- small_files.py: end -->"
SRC_BEGIN = "<!-- small_files.py --sources: begin -->"
SRC_END = "<!-- small_files.py --sources: end -->"
SOURCE_TARGET = {".cu": ("cuda", "sm_90"), ".hip": ("hip", "gfx942")}


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
    """The generated-unit table between BEGIN and END; a --sources block
    already there (between SRC_BEGIN and SRC_END) is kept after it."""
    old = open(path).read() if os.path.exists(path) else ""
    kept = ""
    if SRC_BEGIN in old and SRC_END in old:
        kept = "\n\n" + old[old.index(SRC_BEGIN):old.index(SRC_END) + len(SRC_END)]
    block = f"{BEGIN}\n{text}{kept}\n{END}"
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + block + old[old.index(END) + len(END):]
    else:
        new = old.rstrip("\n") + "\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(new)


def write_sources_results(path, text):
    """The --sources table between SRC_BEGIN and SRC_END, inside the
    small-files section (before its END), leaving the generated-unit table."""
    old = open(path).read() if os.path.exists(path) else ""
    block = f"{SRC_BEGIN}\n{text}\n{SRC_END}"
    if SRC_BEGIN in old and SRC_END in old:
        new = old[:old.index(SRC_BEGIN)] + block + old[old.index(SRC_END) + len(SRC_END):]
    elif BEGIN in old and END in old:
        at = old.index(END)
        new = old[:at].rstrip("\n") + "\n\n" + block + "\n" + old[at:]
    else:
        new = old.rstrip("\n") + f"\n\n{BEGIN}\n{block}\n{END}\n"
    with open(path, "w") as f:
        f.write(new)


# --- --sources: real CUDA and HIP files ---------------------------------------

def load_check_suite():
    """tests/kernels/check_suite.py, for its clang_command and Case table."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.join(root, "tests", "kernels"))
    import check_suite  # noqa: E402
    return check_suite


def source_files(paths):
    """The .cu and .hip files named, or found under the directories named."""
    out = []
    for p in paths:
        if os.path.isfile(p):
            out.append(os.path.abspath(p))
            continue
        for d, dirs, files in os.walk(p):
            dirs.sort()
            out += [os.path.abspath(os.path.join(d, f)) for f in sorted(files)
                    if os.path.splitext(f)[1] in SOURCE_TARGET]
    return [f for f in dict.fromkeys(out) if os.path.splitext(f)[1] in SOURCE_TARGET]


def short_name(path, roots):
    for r in roots:
        r = os.path.abspath(r)
        base = os.path.dirname(r) if os.path.isdir(r) else os.path.dirname(os.path.dirname(r))
        if path.startswith(base + os.sep):
            return os.path.relpath(path, base)
    return os.path.basename(path)


def compile_source(cs, cargs, path, out, extra_includes, clang_args=()):
    """Device-only IR of one file as check_suite.py makes it. Returns
    (rdc, None) or (None, why clang refused)."""
    lang, target = SOURCE_TARGET[os.path.splitext(path)[1]]
    known = next((c for c in cs.CASES if c.sources[lang] and os.path.realpath(path) ==
                  os.path.realpath(os.path.join(cs.HERE, lang, c.sources[lang]))), None)
    tries = [known.rdc] if known else [False, True]  # others: -fgpu-rdc when clang needs it
    if lang == "hip":
        tries = tries[:1]                         # check_suite passes -fgpu-rdc for CUDA only
    err = ""
    for rdc in tries:
        case = cs.Case(os.path.basename(path), **{lang: path}, rdc=rdc)
        cmd = cs.clang_command(cargs, lang, case, target, out)
        extra = [a for d in extra_includes for a in ("-I", d)] + list(clang_args)
        cmd = cmd[:-3] + extra + cmd[-3:]         # before "<src> -o <out>"
        r = cs.run(cmd)
        if r.returncode == 0:
            return rdc, None
        err = err or cs.first_lines(r.stderr, 2)
    return None, "clang: " + " / ".join(l.strip() for l in err.splitlines())


ROCM_BITCODE = ("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode", "/opt/rocm/amdgcn/bitcode")


def device_libs_for(h, target, bc, cuda_path):
    """The device libraries the hand pipeline links in first, as clang would
    (-mlink-builtin-bitcode) and as Kiln does (codegen/device_libs.cpp): for
    IR that calls libdevice (__nv_*) or the ROCm device libraries (__ocml_*,
    __ockl_*); [] when it calls neither, None when they are not found."""
    p = subprocess.run([h.llvm_tool("llvm-dis") or "llvm-dis-22", bc, "-o", "-"],
                       capture_output=True, text=True)
    declared = re.findall(r"^declare\b[^@]*@(__nv_|__ocml_|__ockl_)", p.stdout, re.M)
    if not declared:
        return []
    if target.startswith("sm_"):
        cands = [os.environ.get("KILN_LIBDEVICE", "")] + [
            os.path.join(d, "nvvm", "libdevice", "libdevice.10.bc")
            for d in (cuda_path or "", os.environ.get("CUDA_HOME", ""), "/usr/local/cuda") if d]
        return next(([c] for c in cands if c and os.path.exists(c)), None)
    d = next((d for d in [os.environ.get("KILN_ROCM_DEVICE_LIBS", "")] + list(ROCM_BITCODE)
              if d and os.path.exists(os.path.join(d, "ocml.bc"))), None)
    if not d:
        return None
    isa = target[3:]
    isa_file = next((f for f in (f"oclc_isa_version_{isa}.bc", f"oclc_isa_version_{isa[:2]}0.bc")
                     if os.path.exists(os.path.join(d, f))), None)
    names = ["hip.bc", "ocml.bc", "ockl.bc", "oclc_abi_version_500.bc",
             "oclc_wavefrontsize64_on.bc", "oclc_daz_opt_off.bc", "oclc_finite_only_off.bc",
             "oclc_unsafe_math_off.bc", "oclc_correctly_rounded_sqrt_on.bc"] + \
        ([isa_file] if isa_file else [])
    return [os.path.join(d, n) for n in names if os.path.exists(os.path.join(d, n))]


def hand_with_libs(h, target, bc, libs, jobs, outdir):
    """harness.Harness.hand_pipeline on the IR, after `llvm-link
    --only-needed --internalize` of the device libraries it calls (a timed
    step of its own, "link")."""
    if not libs:
        return h.hand_pipeline(target, bc, jobs, outdir)
    linked = outdir + ".linked.bc"
    _, ms = h.run([h.llvm_tool("llvm-link"), bc, "--only-needed", "--internalize", *libs,
                   "-o", linked])
    hp = h.hand_pipeline(target, linked, jobs, outdir)
    if "steps" in hp:
        hp["steps"] = {"link": ms, **hp["steps"]}
        hp["total_ms"] += ms
    return hp


def run_sources(h, a):
    cs = load_check_suite()
    cargs = argparse.Namespace(clang=a.clang, include=a.include,
                               cuda_path=cs.find_cuda(a.cuda_path),
                               rocm_path=cs.find_rocm(a.rocm_path), llvm_dis=a.llvm_dis)
    files = source_files(a.sources)
    ir = os.path.join(h.work, "ir")
    os.makedirs(ir, exist_ok=True)
    results = []
    for i, path in enumerate(files):
        name = short_name(path, a.sources)
        lang, target = SOURCE_TARGET[os.path.splitext(path)[1]]
        r = {"name": name, "target": target, "kiln": [], "hand": [], "hand_steps": []}
        results.append(r)
        if lang == "cuda" and not cargs.cuda_path:
            r["skipped"] = "no CUDA toolkit headers"
            continue
        if lang == "hip" and not cargs.rocm_path:
            r["skipped"] = "no HIP headers"
            continue
        bc = os.path.join(ir, f"{i:03d}_{os.path.basename(path)}.bc")
        rdc, why = compile_source(cs, cargs, path, bc, a.include_dir, a.clang_arg)
        if why:
            r["skipped"] = why
            continue
        r["rdc"] = rdc
        try:
            r["kernels"] = len(cs.ir_kernels(cargs, bc))
        except RuntimeError as e:
            r["skipped"] = str(e)
            continue
        if not r["kernels"]:
            r["skipped"] = "no kernels in the device IR"
            continue
        libs = device_libs_for(h, target, bc, cargs.cuda_path)
        if libs is None:
            r["skipped"] = "hand pipeline: the device libraries the IR calls are not found"
            continue
        r["libs"] = [os.path.basename(x) for x in libs[:3]]
        h.log(f"{name} ({target}, {r['kernels']} kernels{', -fgpu-rdc' if rdc else ''}): x{a.reps}")
        for _ in range(a.reps):
            db = h.cache("src")
            h.drop(db)
            p, ms = h.run(precompile_argv(h.bin, db, target, a.jobs, bc), check=False)
            if p.returncode not in (0, 1):  # 1: partial success, the other roots are stored
                r["skipped"] = (f"kiln-precompile exit {p.returncode}: "
                                + " ".join(p.stderr.strip().splitlines()[:1]))
                break
            r["exit"] = max(r.get("exit", 0), p.returncode)
            r["kiln"].append(ms)
            try:
                hp = hand_with_libs(h, target, bc, libs, a.jobs,
                                    os.path.join(h.work, "hand", target))
            except SystemExit as e:  # harness.run's exit on a failed tool
                r["skipped"] = "hand pipeline: " + " ".join(str(e).splitlines()[:2])
                break
            if "skipped" in hp:
                r["skipped"] = "hand pipeline: " + hp["skipped"]
                break
            r["hand"].append(hp["total_ms"])
            r["hand_steps"].append(hp["steps"])
        if "skipped" not in r:
            r["ratio"] = statistics.median(r["kiln"]) / statistics.median(r["hand"])
    return results


def sources_rows(results, jobs):
    timed = [r for r in results if "ratio" in r]
    rows = []
    groups = [("all files", timed)]
    for t in dict.fromkeys(r["target"] for r in timed):
        groups.append((f"{t} files", [r for r in timed if r["target"] == t]))
    for label, rs in groups:
        if not rs:
            continue
        ratios = [r["ratio"] for r in rs]
        med, worst = statistics.median(ratios), max(rs, key=lambda r: r["ratio"])
        rows.append((f"real sources, {label} ({len(rs)}): median kiln-precompile vs hand pipeline",
                     f"{med:.2f}x", f"<= {TARGET_RATIO}x", "yes" if med <= TARGET_RATIO else
                     "**MISSED**", f"per-file ratios {min(ratios):.2f}-{max(ratios):.2f}x"))
        over = sorted((r for r in rs if r["ratio"] > TARGET_MAX), key=lambda r: -r["ratio"])
        rows.append((f"real sources, {label} ({len(rs)}): worst file", f"{worst['ratio']:.2f}x",
                     f"<= {TARGET_MAX}x", "yes" if worst["ratio"] <= TARGET_MAX else "**MISSED**",
                     f"{worst['name']}; above {TARGET_MAX}x: {len(over)}" +
                     (" (" + ", ".join(f"{r['name']} {r['ratio']:.2f}x" for r in over[:5]) + ")"
                      if over else "")))
    for r in results:
        if "ratio" not in r:
            continue
        k, hand = statistics.median(r["kiln"]), statistics.median(r["hand"])
        steps = " + ".join(f"{s} {statistics.median(x[s] for x in r['hand_steps']):.0f}"
                           for s in r["hand_steps"][0])
        notes = [f"{r['kernels']} kernel{'s' if r['kernels'] != 1 else ''}"]
        if r.get("rdc"):
            notes.append("-fgpu-rdc")
        if r.get("libs"):
            notes.append("links " + "+".join(r["libs"]) + ("..." if r["target"] != "sm_90" else ""))
        if r.get("exit"):
            notes.append(f"kiln-precompile exit {r['exit']} (partial success)")
        rows.append((f"{r['name']} ({r['target']})", f"{r['ratio']:.2f}x",
                     f"<= {TARGET_MAX}x", "yes" if r["ratio"] <= TARGET_MAX else "**MISSED**",
                     f"kiln {k:.0f} ms, hand {hand:.0f} ms ({steps} ms); {', '.join(notes)}; "
                     f"-j{jobs}, median of {len(r['kiln'])}"))
    for r in results:
        if "skipped" in r:
            rows.append((f"{r['name']} ({r['target']})", "-", "-", "skipped",
                         r["skipped"][:300]))
    return rows


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
    ap.add_argument("--sources", nargs="+", metavar="DIR",
                    help="time these .cu/.hip files (or the ones under these directories) "
                         "instead of the generated units")
    ap.add_argument("--clang", default="clang-22", help="--sources: clang (default clang-22)")
    ap.add_argument("--llvm-dis", default="llvm-dis-22",
                    help="--sources: llvm-dis, to count kernels (default llvm-dis-22)")
    ap.add_argument("--include", default=os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "include"),
                    help="--sources: Kiln's include directory (kiln/device.h)")
    ap.add_argument("--include-dir", action="append", default=[], metavar="DIR",
                    help="--sources: one more -I for clang (e.g. a samples' Common/)")
    ap.add_argument("--clang-arg", action="append", default=[], metavar="ARG",
                    help="--sources: one more clang argument, after check_suite.py's "
                         "(e.g. -include a header some public code needs)")
    ap.add_argument("--cuda-path", help="--sources: CUDA toolkit (check_suite.py's default)")
    ap.add_argument("--rocm-path", help="--sources: HIP headers prefix (check_suite.py's default)")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="kiln-small-")
    os.makedirs(work, exist_ok=True)
    h = Harness(os.path.abspath(a.bin), os.path.abspath(work), os.path.abspath(work), True)
    if a.sources:
        results = run_sources(h, a)
        text = table(sources_rows(results, a.jobs))
        print(text)
        if a.write:
            import platform
            import time
            timed = [r for r in results if "ratio" in r]
            head = (f"### Real CUDA and HIP sources (`small_files.py --sources`)\n\n"
                    f"{platform.machine()}, {os.cpu_count()} cpus, {time.strftime('%Y-%m-%d')}. "
                    f"{len(timed)} of {len(results)} files ("
                    + ", ".join(a.sources if len(a.sources) <= 4 else
                                [f"{len(a.sources)} paths"]) +
                    ") compiled by clang to device-only IR as tests/kernels/check_suite.py "
                    "does (sm_90 for .cu, gfx942 for .hip), then kiln-precompile into a new "
                    "cache beside the hand pipeline on the same IR in every repetition; "
                    "per-file medians, the median and the max over the files."
                    + (f" {a.note}" if a.note else "") + "\n")
            write_sources_results(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                               "results.md"), head + "\n" + text)
        return
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
