#!/usr/bin/env bash
# libkiln's public ABI against the committed baseline (abi/libkiln.abi.xz),
# with libabigail's abidiff: the C API of <kiln/kiln.h> and the C++ classes
# of <kiln/kiln.hpp> (abi/public.suppr says which symbols those are). Any
# change to them (a function removed or retyped, a type changed) fails;
# additions are reported and pass.
#
#   check_abi.sh SOURCE_DIR LIBKILN WORK_DIR
#
# After an intended change, regenerate the baseline (and raise
# KILN_SOVERSION with KILN_ABI_VERSION if the change is incompatible):
#   cmake --build build --target kiln-abi-baseline
set -uo pipefail
src=$1 lib=$2 work=$3
if ! command -v abidiff >/dev/null; then
  echo "KILN-SKIP: abidiff (Debian package abigail-tools) is not installed"
  exit 0
fi
mkdir -p "$work"
xz -dc "$src/abi/libkiln.abi.xz" > "$work/baseline.abi" || exit 1
# --no-unreferenced-symbols: ELF symbols no debug information describes are
# template instantiations of the internal namespaces (the suppressions
# cannot name what has no declaration); every public function has its
# debug information, so a public one removed or changed is still caught.
abidiff --no-unreferenced-symbols --suppressions "$src/abi/public.suppr" --hd2 "$src/include/kiln" \
  --drop-private-types \
  "$work/baseline.abi" "$lib" > "$work/abidiff.txt"
rc=$?
cat "$work/abidiff.txt"
# abidiff's status is a bit set: 1 error, 2 usage, 4 ABI change, 8 incompatible change.
if (( rc & 3 )); then
  echo "abidiff could not compare (status $rc)"
  exit 1
fi
if (( rc & 12 )); then
  echo "libkiln's public ABI changed against abi/libkiln.abi.xz (abidiff status $rc)."
  echo "If intended: regenerate it (cmake --build build --target kiln-abi-baseline), and for an"
  echo "incompatible change raise KILN_SOVERSION and KILN_ABI_VERSION together."
  exit 1
fi
echo "libkiln's public ABI matches abi/libkiln.abi.xz"
