#!/usr/bin/env bash
# GPU check. Part 1 (a machine with Kiln built, GPU not needed) precompiles
# tests/data/gpu_nvptx.ll for sm_90 into a cache and times compile-from-IR;
# part 2 (the GPU machine; needs only libkiln, libcuda and a C compiler)
# loads the cached images, launches the kernels and compares results.
#   tests/gpu/run.sh precompile BUILD_DIR OUT_DIR
#   tests/gpu/run.sh check LIB_DIR INCLUDE_DIR OUT_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
case "${1:-}" in
  precompile)
    build=$2 out=$3
    mkdir -p "$out"
    rm -f "$out/gpu.db"*
    start=$(date +%s%N)
    "$build/bin/kiln-precompile" --cache "$out/gpu.db" --target sm_90 -q \
      --entry k_nested --entry k_fact --entry k_cycle "$here/../data/gpu_nvptx.ll"
    echo "compile from IR (3 roots, 9 jobs, images linked): $(( ($(date +%s%N) - start) / 1000000 )) ms"
    ;;
  check)
    lib=$2 inc=$3 out=$4
    cc -O2 -o "$out/gpu_check" "$here/gpu_check.c" -I"$inc" -L"$lib" -lkiln -ldl -Wl,-rpath,"$lib"
    "$out/gpu_check" "$out/gpu.db"
    ;;
  *)
    echo "usage: $0 precompile BUILD_DIR OUT_DIR | check LIB_DIR INCLUDE_DIR OUT_DIR" >&2
    exit 2
    ;;
esac
