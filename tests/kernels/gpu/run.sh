#!/usr/bin/env bash
# The kernel suite on an NVIDIA GPU, in two parts. Part 1, on a machine with
# Kiln built (LLVM, clang and the CUDA headers; no GPU needed), compiles the
# CUDA sources and precompiles them into one cache; part 2, on the GPU
# machine (libkiln, libcuda and a C compiler only), loads each kernel from
# that cache, launches it and compares its output with the CPU's.
#   tests/kernels/gpu/run.sh precompile BUILD_DIR OUT_DIR [TARGET...]   (default: sm_90 sm_90a)
#   tests/kernels/gpu/run.sh check LIB_DIR INCLUDE_DIR OUT_DIR [TARGET]  (default: the GPU's)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
case "${1:-}" in
  precompile)
    build=$2 out=$3
    shift 3
    targets=("$@")
    [ ${#targets[@]} -gt 0 ] || targets=(sm_90 sm_90a)
    mkdir -p "$out"
    llvm_bin=$(llvm-config-22 --bindir 2>/dev/null || echo /usr/lib/llvm-22/bin)
    args=()
    for t in "${targets[@]}"; do args+=(--target "$t"); done
    # A failing case leaves its kernels out of the cache; the check reports
    # them as load failures.
    python3 "$here/../check_suite.py" --lang cuda "${args[@]}" \
      --precompile "$build/bin/kiln-precompile" --inspect "$build/bin/kiln-inspect" \
      --clang "$llvm_bin/clang" --llvm-dis "$llvm_bin/llvm-dis" \
      --include "$here/../../../include" --work "$out/work" \
      --shared-cache "$out/kernels.db" -j "$(nproc)" ||
      echo "run.sh: some cases failed to precompile (above)"
    ;;
  check)
    lib=$2 inc=$3 out=$4
    cc -std=c11 -O2 -o "$out/kernels_gpu" "$here/kernels_gpu.c" -I"$inc" -L"$lib" -lkiln -ldl -lm \
      -Wl,-rpath,"$lib"
    "$out/kernels_gpu" "$out/kernels.db" ${5:-}
    ;;
  *)
    echo "usage: $0 precompile BUILD_DIR OUT_DIR [TARGET...] | check LIB_DIR INCLUDE_DIR OUT_DIR [TARGET]" >&2
    exit 2
    ;;
esac
