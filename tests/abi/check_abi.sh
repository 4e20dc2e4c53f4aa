#!/usr/bin/env bash
# A library's public ABI against its committed baseline, with libabigail's
# abidiff. libkiln (abi/libkiln.abi.xz): the C API of <kiln/kiln.h> and
# <kiln/admin.h>, the C++ classes of <kiln/kiln.hpp> and the admin API of
# <kiln/admin.hpp> (abi/public.suppr says which symbols those are). libkiln-compiler (abi/libkiln-compiler.abi.xz): the C API of
# <kiln/kiln_compiler.h> and the C++ API of <kiln/compiler.hpp> and
# <kiln/jit.hpp> (abi/compiler.suppr). Any change to them fails, an added
# function too (abidiff reports it as a change): a new API enters the
# baseline when it is added, so that from then on it is compared.
#
#   check_abi.sh SOURCE_DIR LIBRARY WORK_DIR [NAME SUPPRESSIONS]
#
# NAME (default libkiln) names the baseline abi/NAME.abi.xz; SUPPRESSIONS
# (default public.suppr) is a file of abi/. After an intended change,
# regenerate the baselines (and raise the library's soversion with its ABI
# version if the change is incompatible):
#   cmake --build build --target kiln-abi-baseline
set -uo pipefail
src=$1 lib=$2 work=$3 name=${4:-libkiln} suppr=${5:-public.suppr}
if ! command -v abidiff >/dev/null; then
  echo "KILN-SKIP: abidiff (Debian package abigail-tools) is not installed"
  exit 0
fi
mkdir -p "$work"
xz -dc "$src/abi/$name.abi.xz" > "$work/baseline.abi" || exit 1
# --no-unreferenced-symbols: ELF symbols no debug information describes are
# template instantiations of the internal namespaces (the suppressions
# cannot name what has no declaration); every public function has its
# debug information, so a public one removed or changed is still caught.
abidiff --no-unreferenced-symbols --suppressions "$src/abi/$suppr" --hd2 "$src/include/kiln" \
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
  echo "$name's public ABI changed against abi/$name.abi.xz (abidiff status $rc)."
  echo "If intended: regenerate it (cmake --build build --target kiln-abi-baseline), and for an"
  echo "incompatible change raise the library's soversion and ABI version together."
  exit 1
fi
echo "$name's public ABI matches abi/$name.abi.xz"
