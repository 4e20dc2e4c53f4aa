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
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
TESTS = HERE.parent / "tests" / "python"
sys.path.insert(0, str(TESTS))
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

TARGETS = ["sm_80", "sm_90", "gfx942"]


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
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton_kernels import KERNELS
for name in ("add_kernel", "softmax_kernel", "layer_norm_kernel"):
    fn, sig, cx = KERNELS[name]
    triton.compile(ASTSource(fn=fn, signature=dict(sig, **{{c: "constexpr" for c in cx}}),
                             constexprs=cx), target=GPUTarget("cuda", 80, 32))
"""


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


def warm(work):
    out = {}
    for manager in ("triton", "kiln"):
        env = manager_env(work, manager, "warm")
        script = WARM.format(tests=str(TESTS), targets=TARGETS)
        subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True)
        runs = [json.loads(subprocess.run([sys.executable, "-c", script], env=env, check=True,
                                          capture_output=True, text=True).stdout.splitlines()[-1])
                for _ in range(5)]
        # Per kernel: the median over 5 fresh processes, then the mean over kernels.
        # The first kernel of a process also pays Triton's own start-up (its
        # key hashes Triton's sources): reported apart.
        per_kernel = [sorted(r[i] for r in runs)[2] for i in range(len(runs[0]))]
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
        failures, errors = 0, {}
        start = time.perf_counter()
        for r in range(rounds):
            env = manager_env(work, manager, f"storm-{network or 'local'}-{r}")
            if network:
                env["KILN_NETWORK_FS"] = network
            ps = [subprocess.Popen([sys.executable, "-c", STORM.format(tests=str(TESTS))], env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                  for _ in range(procs)]
            for p in ps:
                _, err = p.communicate()
                if p.returncode != 0:
                    failures += 1
                    last = (err.strip().splitlines() or ["?"])[-1][:160]
                    errors[last] = errors.get(last, 0) + 1
        out[manager] = dict(processes=procs, rounds=rounds, failures=failures, errors=errors,
                            seconds=round(time.perf_counter() - start, 1))
        print(manager, "storm", network or "local", json.dumps(out[manager]), flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--json")
    args = ap.parse_args()
    import triton
    with tempfile.TemporaryDirectory(prefix="kiln-triton-bench-") as d:
        work = pathlib.Path(d)
        result = dict(triton=triton.__version__, cold=cold_compiles(work), warm=warm(work),
                      storm=storm(work, args.procs, args.rounds),
                      storm_rollback=storm(work, args.procs, max(1, args.rounds // 4), "nfs"))
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
    w = result["warm"]
    print(f"warm, a fresh process reaching each kernel (median of 5 processes): first kernel "
          f"(with Triton's start-up) Triton's file cache {w['triton']['first_ms']:.1f} ms, Kiln's "
          f"{w['kiln']['first_ms']:.1f} ms; the other {len(w['kiln']['per_kernel_ms']) - 1}: "
          f"median {w['triton']['rest_median_ms']:.2f} ms against {w['kiln']['rest_median_ms']:.2f} ms, "
          f"mean {w['triton']['rest_mean_ms']:.2f} ms against {w['kiln']['rest_mean_ms']:.2f} ms")
    for key in ("storm", "storm_rollback"):
        s = result[key]
        print(f"#11512 pattern ({key}): {s['kiln']['processes']} processes x {s['kiln']['rounds']} "
              f"rounds: Triton's file cache {s['triton']['failures']} failures "
              f"{s['triton']['errors'] or ''}, Kiln {s['kiln']['failures']} failures")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
