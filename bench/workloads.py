"""Deterministic benchmark workloads: LLVM IR units (and C equivalents for the
ccache comparison) generated from fixed parameters, never from a clock or a
random seed, so every run measures the same inputs."""

import os

# Kernel sizes: a kernel is a chain of `stages` diamonds (mul, add, compare,
# two arms, phi), so instructions and basic blocks grow linearly.
KERNEL_SIZES = {"small": 4, "medium": 64, "large": 1024}
CLOSURE_SIZES = [1, 10, 100]
UNIT_ROOTS = 1000
PARALLEL_ROOTS = 8
PARALLEL_STAGES = 256


def _stage_chain(lines, first, stages, salt, kind="double"):
    """Appends `stages` diamonds starting from value %x0; returns the last value."""
    prev = first
    for k in range(1, stages + 1):
        c = 1.0 + ((k * 7 + salt) % 13) / 16.0
        d = ((k * 5 + salt) % 11) / 8.0
        e = 2.0 + ((k * 3 + salt) % 5) / 4.0
        lines += [
            f"s{k}:",
            f"  %a{k} = fmul double {prev}, {c:.6e}",
            f"  %b{k} = fadd double %a{k}, {d:.6e}",
            f"  %c{k} = fcmp olt double %b{k}, 1.000000e+02",
            f"  br i1 %c{k}, label %t{k}, label %f{k}",
            f"t{k}:",
            f"  %yt{k} = fmul double %b{k}, %b{k}",
            f"  br label %j{k}",
            f"f{k}:",
            f"  %yf{k} = fdiv double %b{k}, {e:.6e}",
            f"  br label %j{k}",
            f"j{k}:",
            f"  %x{k} = phi double [ %yt{k}, %t{k} ], [ %yf{k}, %f{k} ]",
            f"  br label %s{k + 1}" if k < stages else "  br label %out",
        ]
        prev = f"%x{k}"
    return f"%x{stages}"


def kernel_fn(name, stages, salt=0, attrs=""):
    lines = [f"define double @{name}(double %x0){attrs} {{", "entry:", "  br label %s1"]
    last = _stage_chain(lines, "%x0", stages, salt)
    lines += ["out:", f"  ret double {last}", "}"]
    return "\n".join(lines) + "\n"


def size_unit(size):
    return f"; kernel size '{size}': {KERNEL_SIZES[size]} stages\n\n" + kernel_fn(
        f"size_{size}", KERNEL_SIZES[size])


def closure_unit(n):
    """A closure of n jobs: node i defers to nodes 2i+1 and 2i+2 (a binary
    tree), so the closure has depth and fan-out; node 0 is the root."""
    out = [f"; closure of {n} jobs: node i defers to 2i+1 and 2i+2\n",
           "declare ptr @kiln_deferred(ptr)\n"]
    for i in range(n):
        kids = [c for c in (2 * i + 1, 2 * i + 2) if c < n]
        name = f"closure{n}_n{i}"
        lines = [f"define i64 @{name}(i64 %x) {{", "entry:"]
        acc = "%x"
        for j in range(8):  # a few instructions of its own
            lines.append(f"  %v{j} = mul i64 {acc}, {i * 8 + j + 3}")
            lines.append(f"  %w{j} = xor i64 %v{j}, {j + 1}")
            acc = f"%w{j}"
        for c in kids:
            lines.append(f"  %p{c} = call ptr @kiln_deferred(ptr @closure{n}_n{c})")
            lines.append(f"  %r{c} = call i64 %p{c}(i64 {acc})")
            lines.append(f"  %s{c} = add i64 {acc}, %r{c}")
            acc = f"%s{c}"
        lines += [f"  ret i64 {acc}", "}"]
        out.append("\n".join(lines) + "\n")
    return "\n".join(out)


def unit_roots_ir(n):
    out = [f"; a unit of {n} independent roots\n"]
    for i in range(n):
        out.append(f"define i64 @u{i}(i64 %x) {{\n  %a = mul i64 %x, {i + 1}\n"
                   f"  %b = add i64 %a, {i}\n  ret i64 %b\n}}\n")
    return "\n".join(out)


def unit_roots_c(n):
    return "".join(f"long u{i}(long x) {{ return x * {i + 1} + {i}; }}\n" for i in range(n))


def parallel_unit():
    return "".join(kernel_fn(f"par{i}", PARALLEL_STAGES, salt=i) + "\n"
                   for i in range(PARALLEL_ROOTS))


def gpu_unit():
    # The medium kernel, marked as a kernel for every target.
    return kernel_fn("gpu_medium", KERNEL_SIZES["medium"], attrs=" #0") + \
        '\nattributes #0 = { "kiln-kernel" }\n'


# GPU-shaped units for the cold-compile comparison with the hand pipeline:
# N kernels, each like one instantiation of a templated element-wise kernel
# (a grid-stride loop with two loads, a store, a few dozen instructions of
# math whose constants and shape vary with the instantiation), for each
# target's own triple, layout and kernel convention.
UNIT_KERNEL_COUNTS = [1, 10, 200, 1000]
GPU_TARGETS = {
    # spec: (triple, datalayout, kernel convention, pointer type)
    "sm_90": ("nvptx64-nvidia-cuda",
              "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64",
              "ptx_kernel", "ptr"),
    "gfx942": ("amdgcn-amd-amdhsa",
               "e-m:e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-"
               "p7:160:256:256:32-p8:128:128:128:48-p9:192:256:256:32-i64:64-v16:16-v24:32-"
               "v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-"
               "S32-A5-G1-ni:7:8:9",
               "amdgpu_kernel", "ptr addrspace(1)"),
    "host": ("x86_64-unknown-linux-gnu",
             "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128",
             "", "ptr"),
}


def _f(v):
    """A float constant as LLVM IR writes it (exactly representable)."""
    return f"{v:.6e}"


def gpu_kernel(target, k):
    """Kernel k of a unit for `target`: out[i] = f_k(a[i], b[i]) over a
    grid-stride loop (the host walks i = 0..n-1)."""
    _, _, cc, pt = GPU_TARGETS[target]
    cc = cc + " " if cc else ""
    c = [1.0 + ((k * 7 + j * 3) % 29) / 32.0 for j in range(8)]
    terms = 2 + k % 4          # polynomial terms: the instantiation's "order"
    clamp = k % 3 == 0         # some instantiations clamp, some use a select
    L = [f"define {cc}void @k{k}({pt} %out, {pt} %a, {pt} %b, i32 %n) {{", "entry:"]
    if target == "sm_90":
        L += ["  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()",
              "  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()",
              "  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()",
              "  %nctaid = call i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()",
              "  %base0 = mul i32 %ctaid, %ntid",
              "  %first = add i32 %base0, %tid",
              "  %stride = mul i32 %ntid, %nctaid"]
    elif target == "gfx942":
        L += ["  %tid = call i32 @llvm.amdgcn.workitem.id.x()",
              "  %wg = call i32 @llvm.amdgcn.workgroup.id.x()",
              "  %base0 = shl i32 %wg, 8",
              "  %first = add i32 %base0, %tid",
              "  %stride = add i32 0, 1048576"]  # launched as 4096 groups of 256
    else:
        L += ["  %first = add i32 0, 0", "  %stride = add i32 1, 0"]
    L += ["  %go = icmp slt i32 %first, %n",
          "  br i1 %go, label %body, label %done",
          "body:",
          "  %i = phi i32 [ %first, %entry ], [ %next, %body ]",
          "  %ix = sext i32 %i to i64",
          f"  %pa = getelementptr inbounds float, {pt} %a, i64 %ix",
          f"  %x = load float, {pt} %pa, align 4",
          f"  %pb = getelementptr inbounds float, {pt} %b, i64 %ix",
          f"  %y = load float, {pt} %pb, align 4",
          f"  %s0 = fmul float %x, {_f(c[0])}",
          f"  %s1 = call float @llvm.fma.f32(float %y, float {_f(c[1])}, float %s0)"]
    # Horner's rule: p = ((c2 x + c3) x + c4) ...
    acc = _f(c[2])
    for t in range(terms):
        L.append(f"  %h{t} = call float @llvm.fma.f32(float {acc}, float %x, "
                 f"float {_f(c[3 + t])})")
        acc = f"%h{t}"
    L += [f"  %m0 = fadd float %s1, {acc}",
          "  %m1 = call float @llvm.fabs.f32(float %m0)",
          "  %m2 = call float @llvm.sqrt.f32(float %m1)",
          f"  %m3 = fmul float %m2, %y",
          f"  %m4 = fsub float %m3, {_f(c[7])}"]
    if clamp:
        L += ["  %m5 = call float @llvm.maxnum.f32(float %m4, float 0.000000e+00)",
              f"  %r = call float @llvm.minnum.f32(float %m5, float {_f(64.0 + k % 7)})"]
    else:
        L += [f"  %lt = fcmp olt float %m4, {_f(c[6])}",
              "  %m5 = fdiv float %m4, %m2",
              "  %r = select i1 %lt, float %m5, float %m4"]
    L += [f"  %po = getelementptr inbounds float, {pt} %out, i64 %ix",
          f"  store float %r, {pt} %po, align 4",
          "  %next = add nsw i32 %i, %stride",
          "  %more = icmp slt i32 %next, %n",
          "  br i1 %more, label %body, label %done",
          "done:",
          "  ret void",
          "}"]
    return "\n".join(L) + "\n"


def gpu_kernel_unit(target, n):
    triple, layout, _, _ = GPU_TARGETS[target]
    decls = ["declare float @llvm.fma.f32(float, float, float)",
             "declare float @llvm.fabs.f32(float)",
             "declare float @llvm.sqrt.f32(float)",
             "declare float @llvm.maxnum.f32(float, float)",
             "declare float @llvm.minnum.f32(float, float)"]
    if target == "sm_90":
        decls += [f"declare i32 @llvm.nvvm.read.ptx.sreg.{r}.x()"
                  for r in ("tid", "ntid", "ctaid", "nctaid")]
    elif target == "gfx942":
        decls += ["declare i32 @llvm.amdgcn.workitem.id.x()",
                  "declare i32 @llvm.amdgcn.workgroup.id.x()"]
    head = [f"; {n} instantiations of an element-wise kernel for {target}",
            f'target datalayout = "{layout}"', f'target triple = "{triple}"', ""]
    return "\n".join(head) + "\n".join(gpu_kernel(target, k) for k in range(n)) + \
        "\n" + "\n".join(decls) + "\n"


# Deferred graphs for the planner: a chain of N functions, each deferring
# to the next (one root, the head), and a cycle of N functions, each
# deferring to the next and the last to the first (every function a root).
# Planning must be linear in N; a flat unit of the same N functions with no
# deferred references is the comparison for the cache's bytes.
DEFERRED_CHAIN_DEPTHS = [1000, 5000, 10000, 100000]
DEFERRED_CYCLE_SIZES = [100, 300, 1000]


def _graph_fn(name, i, child):
    """Function i of a deferred graph: a few instructions of its own, then,
    if `child`, a call to it through kiln_deferred."""
    lines = [f"define i64 @{name}(i64 %x) {{",
             f"  %a = mul i64 %x, {i + 3}",
             f"  %b = xor i64 %a, {i * 7 + 1}"]
    if child:
        lines += [f"  %p = call ptr @kiln_deferred(ptr @{child})",
                  "  %r = call i64 %p(i64 %b)",
                  "  %s = add i64 %b, %r",
                  "  ret i64 %s", "}"]
    else:
        lines += ["  ret i64 %b", "}"]
    return "\n".join(lines) + "\n"


def deferred_chain(n):
    """chain{n}_0 defers to chain{n}_1 ... to chain{n}_{n-1}."""
    out = [f"; a deferred chain {n} deep: function i defers to i+1\n",
           "declare ptr @kiln_deferred(ptr)\n"]
    for i in range(n):
        out.append(_graph_fn(f"chain{n}_{i}", i, f"chain{n}_{i + 1}" if i + 1 < n else None))
    return "\n".join(out)


def deferred_cycle(n):
    """cycle{n}_i defers to cycle{n}_{(i+1) mod n}: every job's closure is
    the whole cycle."""
    out = [f"; a deferred cycle of {n}: function i defers to (i+1) mod {n}\n",
           "declare ptr @kiln_deferred(ptr)\n"]
    for i in range(n):
        out.append(_graph_fn(f"cycle{n}_{i}", i, f"cycle{n}_{(i + 1) % n}"))
    return "\n".join(out)


def flat_unit(n):
    """The same shape of functions as the graphs, with no deferred reference."""
    return f"; {n} plain functions\n\n" + "\n".join(
        _graph_fn(f"flat{n}_{i}", i, None) for i in range(n))


def _write(work, name, text):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def write_graphs(work, chains=DEFERRED_CHAIN_DEPTHS, cycles=DEFERRED_CYCLE_SIZES):
    """The deferred-graph workloads (written on demand: the 100,000-deep chain
    is 20 MB of IR); returns {name: (path, entries)}."""
    os.makedirs(work, exist_ok=True)
    files = {}

    def put(name, text, entries):
        files[name] = (_write(work, name, text), entries)

    for n in chains:
        put(f"chain_{n}.ll", deferred_chain(n), [f"chain{n}_0"])
    for n in cycles:
        put(f"cycle_{n}.ll", deferred_cycle(n), [f"cycle{n}_{i}" for i in range(n)])
    for n in sorted(set(cycles) | set(chains)):
        put(f"flat_{n}.ll", flat_unit(n), [f"flat{n}_{i}" for i in range(n)])
    return files


def write_all(work):
    """Writes every workload under `work`; returns {name: (path, entries)}."""
    os.makedirs(work, exist_ok=True)
    files = {}

    def put(name, text, entries):
        files[name] = (_write(work, name, text), entries)

    for size in KERNEL_SIZES:
        put(f"size_{size}.ll", size_unit(size), [f"size_{size}"])
    for n in CLOSURE_SIZES:
        put(f"closure_{n}.ll", closure_unit(n), [f"closure{n}_n0"])
    put(f"unit_{UNIT_ROOTS}.ll", unit_roots_ir(UNIT_ROOTS), [f"u{i}" for i in range(UNIT_ROOTS)])
    put("unit_1.ll", unit_roots_ir(1), ["u0"])
    put(f"unit_{UNIT_ROOTS}.c", unit_roots_c(UNIT_ROOTS), [])
    put("unit_1.c", unit_roots_c(1), [])
    put("parallel.ll", parallel_unit(), [f"par{i}" for i in range(PARALLEL_ROOTS)])
    put("gpu.ll", gpu_unit(), ["gpu_medium"])
    for target in GPU_TARGETS:
        for n in UNIT_KERNEL_COUNTS:
            put(f"kernels_{target}_{n}.ll", gpu_kernel_unit(target, n),
                [f"k{k}" for k in range(n)])
    return files


if __name__ == "__main__":
    import sys
    for name, (path, entries) in write_all(sys.argv[1] if len(sys.argv) > 1 else "work").items():
        print(path, len(entries))
