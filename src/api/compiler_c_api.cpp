// The compiler's C API (include/kiln/kiln_compiler.h).
