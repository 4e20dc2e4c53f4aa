// Extraction edge cases for kiln-bench extract-check (bench/harness.py): debug info,
// comdat templates, a template value parameter naming a global, aliases, static
// constructors. extract_edges{,_g}.ll: clang++-22 -O1 [-g] -S -emit-llvm -ffile-prefix-map=$PWD=.
#include <stddef.h>
int counter = 0;
static int hidden[4] = {1, 2, 3, 4};
int* const table_ptr = &hidden[1];
template <int* P> int read_it() { return *P; }
template <typename T> T twice(T x) { counter++; return x + x; }
struct Box { int v; Box(int x) : v(x) { counter += x; } ~Box() { counter--; } };
Box global_box(7);
extern "C" int use_template() { return read_it<&counter>() + twice(3); }
extern "C" double use_double(double d) { return twice(d) + hidden[2]; }
extern "C" int other(int x) { Box b(x); return b.v + *table_ptr; }
extern "C" int aliased_impl(int x) { return x * 3; }
extern "C" int aliased(int) __attribute__((alias("aliased_impl")));
extern "C" int calls_alias(int x) { return aliased(x) + 1; }
