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


def write_all(work):
    """Writes every workload under `work`; returns {name: (path, entries)}."""
    os.makedirs(work, exist_ok=True)
    files = {}

    def put(name, text, entries):
        path = os.path.join(work, name)
        with open(path, "w") as f:
            f.write(text)
        files[name] = (path, entries)

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
    return files


if __name__ == "__main__":
    import sys
    for name, (path, entries) in write_all(sys.argv[1] if len(sys.argv) > 1 else "work").items():
        print(path, len(entries))
