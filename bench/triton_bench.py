"""Triton under Kiln, side by side with Triton's own compile and cache, in
one run (figures, not a timed test). Needs the kiln package installed with
the Triton extra (`pip install '.[triton]'`), and for register counts cuobjdump
(Triton's wheel has one) and LLVM 22's llvm-readelf.

    python bench/triton_bench.py [--procs 8] [--rounds 20] [--json out.json]

Prints, for every tutorial kernel and target:
- cold compile: Triton's own (triton.compile to cubin/hsaco) against Kiln's
  AOT path (Triton's front end to LLVM IR, then Kiln's compile, link and
  metadata root), each with nothing cached, in one warm process;
- the image's registers and shared memory against Triton's own binary's,
  and for gfx942 whether the code object carries the kernel's .kd;
- warm: a fresh process served from each cache, per kernel;
- Triton #11512's pattern: N processes compiling the same kernels into one
  fresh cache, R rounds, failures through Triton's file cache and through
  kiln.triton:CacheManager."""
import argparse
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
TESTS = HERE.parent / "tests" / "python"
sys.path.insert(0, str(TESTS))
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

TARGETS = ["sm_80", "sm_90", "gfx942"]
STORM_KERNELS = ("add_kernel", "softmax_kernel", "layer_norm_kernel")


def cuobjdump():
    """Triton's wheel carries the CUDA toolkit's cuobjdump; else PATH's."""
    import triton
    bundled = pathlib.Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    return str(bundled) if bundled.exists() else (shutil.which("cuobjdump") or "cuobjdump")


def cuda_resources(binary, name):
    """(registers, static shared bytes) of kernel ``name`` in a cubin."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(binary)
        f.flush()
        out = subprocess.run([cuobjdump(), "--dump-resource-usage", f.name],
                             capture_output=True, text=True).stdout
    m = re.search(r"Function " + re.escape(name) + r":\s*\n?\s*REG:(\d+).*?SHARED:(\d+)", out, re.S)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def amd_resources(binary, name):
    """(VGPRs, group segment bytes, has .kd) of kernel ``name`` in a code object."""
    with tempfile.NamedTemporaryFile(suffix=".hsaco") as f:
        f.write(binary)
        f.flush()
        out = subprocess.run(["llvm-readelf-22", "--notes", "--symbols", f.name],
                             capture_output=True, text=True).stdout
    vgpr = re.search(r"\.vgpr_count:\s+(\d+)", out)
    lds = re.search(r"\.group_segment_fixed_size:\s+(\d+)", out)
    return (int(vgpr.group(1)) if vgpr else None, int(lds.group(1)) if lds else None,
            (name + ".kd") in out)


def cold_compiles(work):
    import triton
    from triton.compiler import ASTSource
    import kiln
    import kiln.triton
    from triton_kernels import KERNELS
    os.environ["TRITON_CACHE_DIR"] = str(work / "triton-cold")
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    # Warm up both paths once (imports, Triton's and LLVM's start-up).
    fn, sig, cx = KERNELS["add_kernel"]
    warm = kiln.Cache(work / "warmup.db")
    kiln.triton.precompile(fn, sig, cx, TARGETS, warm)
    for t in TARGETS:
        triton.compile(ASTSource(fn=fn, signature=dict(sig, **{k: "constexpr" for k in cx}),
                                 constexprs=cx), target=kiln.triton.gpu_target(t))
    rows = []
    for name, (fn, sig, cx) in KERNELS.items():
        for t in TARGETS:
            target = kiln.triton.gpu_target(t)
            src = ASTSource(fn=fn, signature=dict(sig, **{c: "constexpr" for c in cx}), constexprs=cx)
            # Twice each, in both orders (what one leaves warm, such as
            # Triton's parsed source, the other may use); the faster of each.
            triton_ms, kiln_ms = [], []
            for rep in range(2):
                for which in (("triton", "kiln") if rep == 0 else ("kiln", "triton")):
                    start = time.perf_counter()
                    if which == "triton":
                        k = triton.compile(src, target=target)
                        triton_ms.append((time.perf_counter() - start) * 1e3)
                    else:
                        cache = kiln.Cache(work / f"cold-{name}-{t}-{rep}.db")
                        p = kiln.triton.precompile(fn, sig, cx, [t], cache)[0]
                        kiln_ms.append((time.perf_counter() - start) * 1e3)
            triton_ms, kiln_ms = min(triton_ms), min(kiln_ms)
            image = work / f"{name}-{t}.image"
            subprocess.run([pathlib.Path(sys.executable).parent / "kiln-inspect", "--cache",
                            cache.path, "image", name, "--target", p.target, "-o", image], check=True)
            ours = image.read_bytes()
            row = dict(kernel=name, target=t, triton_ms=round(triton_ms, 1),
                       kiln_ms=round(kiln_ms, 1), kiln_frontend_ms=round(p.frontend_ms, 1),
                       kiln_compile_ms=round(p.kiln_ms, 1), ratio=round(kiln_ms / triton_ms, 3),
                       triton_shared=k.metadata.shared, kiln_shared=p.metadata["shared"],
                       name_ok=p.name == k.metadata.name)
            if target.backend == "cuda":
                row["triton_regs"], row["triton_static_smem"] = cuda_resources(k.asm["cubin"], name)
                row["kiln_regs"], row["kiln_static_smem"] = cuda_resources(ours, name)
            else:
                row["triton_regs"], row["triton_static_smem"], _ = amd_resources(k.asm["hsaco"], name)
                row["kiln_regs"], row["kiln_static_smem"], row["kd"] = amd_resources(ours, name)
            rows.append(row)
            print(json.dumps(row), flush=True)
    del os.environ["TRITON_ALWAYS_COMPILE"]
    return rows


WARM = r"""
import sys, time, json
sys.path.insert(0, {tests!r})
import triton
from triton.compiler import ASTSource
import kiln.triton
from triton_kernels import KERNELS
times = []
for name, (fn, sig, cx) in KERNELS.items():
    for t in {targets!r}:
        src = ASTSource(fn=fn, signature=dict(sig, **{{c: "constexpr" for c in cx}}), constexprs=cx)
        start = time.perf_counter()
        triton.compile(src, target=kiln.triton.gpu_target(t))
        times.append((time.perf_counter() - start) * 1e3)
print(json.dumps(times))
"""

STORM = r"""
import sys
sys.path.insert(0, {tests!r})
import triton
import triton.knobs
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton_kernels import KERNELS
compiled = []
triton.knobs.compilation.listener = lambda **kw: compiled.append(not kw["cache_hit"])
for name in STORM_KERNELS:
    fn, sig, cx = KERNELS[name]
    triton.compile(ASTSource(fn=fn, signature=dict(sig, **{{c: "constexpr" for c in cx}}),
                             constexprs=cx), target=GPUTarget("cuda", 80, 32))
print(sum(compiled))
""".replace("STORM_KERNELS", repr(STORM_KERNELS))


def manager_env(work, manager, tag):
    env = dict(os.environ)
    env.pop("TRITON_ALWAYS_COMPILE", None)
    env["TRITON_CACHE_DIR"] = str(work / f"triton-{tag}")
    env["KILN_TRITON_CACHE"] = str(work / f"kiln-{tag}.db")
    if manager == "kiln":
        env["TRITON_CACHE_MANAGER"] = "kiln.triton:CacheManager"
    else:
        env.pop("TRITON_CACHE_MANAGER", None)
    return env


def warm(work, procs=5):
    """Fresh processes served from each cache, the two caches' processes
    taking turns (a machine whose load moves weighs on both alike)."""
    script = WARM.format(tests=str(TESTS), targets=TARGETS)
    envs = {m: manager_env(work, m, "warm") for m in ("triton", "kiln")}
    for env in envs.values():  # fills the cache
        subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True)
    runs = {m: [] for m in envs}
    for _ in range(procs):
        for m, env in envs.items():
            out = subprocess.run([sys.executable, "-c", script], env=env, check=True,
                                 capture_output=True, text=True).stdout
            runs[m].append(json.loads(out.splitlines()[-1]))
    out = {}
    for manager, rs in runs.items():
        # Per kernel: the median over the fresh processes, then the mean over kernels.
        # The first kernel of a process also pays Triton's own start-up (its
        # key hashes Triton's sources): reported apart.
        per_kernel = [statistics.median(r[i] for r in rs) for i in range(len(rs[0]))]
        rest = sorted(per_kernel[1:])
        out[manager] = dict(first_ms=round(per_kernel[0], 3),
                            rest_mean_ms=round(sum(rest) / len(rest), 3),
                            rest_median_ms=round(rest[len(rest) // 2], 3),
                            per_kernel_ms=[round(x, 3) for x in per_kernel])
        print(manager, "warm", json.dumps(out[manager]), flush=True)
    return out


def storm(work, procs, rounds, network=None):
    out = {}
    for manager in ("triton", "kiln"):
        failures, errors, compiles = 0, {}, 0
        start = time.perf_counter()
        for r in range(rounds):
            env = manager_env(work, manager, f"storm-{network or 'local'}-{r}")
            if network:
                env["KILN_NETWORK_FS"] = network
            ps = [subprocess.Popen([sys.executable, "-c", STORM.format(tests=str(TESTS))], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                  for _ in range(procs)]
            for p in ps:
                stdout, err = p.communicate()
                if p.returncode == 0:
                    compiles += int(stdout.split()[-1])
                else:
                    failures += 1
                    last = (err.strip().splitlines() or ["?"])[-1][:160]
                    errors[last] = errors.get(last, 0) + 1
        # compiles: how many times Triton compiled a kernel (a miss), over
        # all processes and rounds; once per kernel and round is the least.
        out[manager] = dict(processes=procs, rounds=rounds, failures=failures, errors=errors,
                            compiles=compiles, kernels=len(STORM_KERNELS) * rounds,
                            seconds=round(time.perf_counter() - start, 1))
        print(manager, "storm", network or "local", json.dumps(out[manager]), flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--warm-procs", type=int, default=5,
                    help="fresh processes per cache for the warm figures (their median per kernel)")
    ap.add_argument("--parts", default="cold,warm,storm",
                    help="which parts to run (cold needs the C++ package and kiln-inspect)")
    ap.add_argument("--json")
    ap.add_argument("--merge", action="store_true",
                    help="replace only the parts run in --json's file, keeping the others")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    import triton
    result = dict(triton=triton.__version__)
    with tempfile.TemporaryDirectory(prefix="kiln-triton-bench-") as d:
        work = pathlib.Path(d)
        if "cold" in parts:
            result["cold"] = cold_compiles(work)
        if "warm" in parts:
            result["warm"] = warm(work, args.warm_procs)
        if "storm" in parts:
            result["storm"] = storm(work, args.procs, args.rounds)
            result["storm_rollback"] = storm(work, args.procs, max(1, args.rounds // 4), "nfs")
    if "cold" in result:
        cold = result["cold"]
        total_t = sum(r["triton_ms"] for r in cold)
        total_k = sum(r["kiln_ms"] for r in cold)
        print(f"\nTriton {result['triton']}: cold, all {len(cold)} kernels x targets: Triton "
              f"{total_t:.0f} ms, Kiln AOT {total_k:.0f} ms ({total_k / total_t:.2f}x)")
        print(f"{'kernel':20} {'target':7} {'triton ms':>9} {'kiln ms':>8} {'ratio':>6} "
              f"{'regs T/K':>9} {'smem T/K':>13} kd")
        for r in cold:
            print(f"{r['kernel']:20} {r['target']:7} {r['triton_ms']:9.1f} {r['kiln_ms']:8.1f} "
                  f"{r['ratio']:6.2f} {r['triton_regs']!s:>4}/{r['kiln_regs']!s:<4} "
                  f"{r['triton_shared']!s:>6}/{r['kiln_shared']!s:<6} {r.get('kd', '')}")
    if "warm" in result:
        w = result["warm"]
        print(f"warm, a fresh process reaching each kernel (median of {args.warm_procs} processes): "
              f"first kernel (with Triton's start-up) Triton's file cache {w['triton']['first_ms']:.1f} "
              f"ms, Kiln's {w['kiln']['first_ms']:.1f} ms; the other "
              f"{len(w['kiln']['per_kernel_ms']) - 1}: median {w['triton']['rest_median_ms']:.2f} ms "
              f"against {w['kiln']['rest_median_ms']:.2f} ms, mean {w['triton']['rest_mean_ms']:.2f} "
              f"ms against {w['kiln']['rest_mean_ms']:.2f} ms")
    for key in ("storm", "storm_rollback"):
        if key not in result:
            continue
        s = result[key]
        print(f"#11512 pattern ({key}): {s['kiln']['processes']} processes x {s['kiln']['rounds']} "
              f"rounds: Triton's file cache {s['triton']['failures']} failures "
              f"{s['triton']['errors'] or ''}, {s['triton']['compiles']} compiles; Kiln "
              f"{s['kiln']['failures']} failures, {s['kiln']['compiles']} compiles "
              f"({s['kiln']['kernels']} kernels)")
    if args.json:
        path = pathlib.Path(args.json)
        if args.merge and path.exists():
            result = dict(json.loads(path.read_text()), **result)
        path.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
