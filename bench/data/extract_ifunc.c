// An ifunc (target_clones) for kiln-bench extract-check; extract_ifunc_g.ll:
// clang-22 -g -O1 -S -emit-llvm -ffile-prefix-map=$PWD=. extract_ifunc.c
__attribute__((target_clones("avx2","default"))) int clone_me(int x) { return x * 2; }
int use_clone(int x) { return clone_me(x) + 1; }
int plain(int x) { return x - 1; }
