#!/usr/bin/env python3
"""What libkiln and libkiln-link export: the ABI fence (src/libkiln.map.in).

libkiln's dynamic symbols must be its public API under KILN_0 (C functions
named kiln_*, and C++ symbols of kiln::Cache, kiln::Image, kiln::admin and
the request.hpp functions libkiln defines) and, under KILN_PRIVATE_<release>,
one symbol: kiln_private_bridge, the table libkiln-compiler calls libkiln's
internals through (src/bridge/bridge.h). No symbol of the bundled C++
runtime or of an internal namespace may be exported. libkiln-link exports
its C entry points alone, and libkiln-compiler (when given) no symbol of
namespace kiln beyond its public API (src/libkiln-compiler.map). libkiln
needs nothing at load but the C library and the dynamic loader: every other
library is one more for each process that only loads images to map at start
(SQLite, zstd, hiredis and libsodium are opened when first used, libgcc_s at
the first exception, and one std::round once brought in libm). Prints the
counts.

    check_exports.py LIBKILN LIBKILN_LINK RELEASE [LIBKILN_COMPILER]
"""
import re
import subprocess
import sys

PUBLIC_CXX = re.compile(r'^(kiln::(Cache|Image)::|kiln::admin::|kiln::compile_on_demand\(|'
                        r'kiln::job_status_name\(|kiln::must_hit_from_environment\(|'
                        r'kiln::CompileReport::(ok|first_failure)\()')
# libkiln-compiler's public C++ API (src/libkiln-compiler.map).
COMPILER_CXX = re.compile(r'^kiln::((compile|compile_or_load|error_info|stats|present_target)|'
                          r'CompileReport::\S+|Plan::(Plan|~Plan|operator=|create|run|describe|'
                          r'job_count|toolchain_files))(\[abi:cxx11\])?\(')
# Its own symbols: namespace kiln, and Kiln's C types' members.
KILN_SYMBOL = re.compile(r'^(kiln::|kiln_[a-z_]+::)')
BRIDGE = 'kiln_private_bridge'


def dynamic_symbols(lib):
    out = subprocess.run(['nm', '-D', '--defined-only', '--with-symbol-versions', lib],
                         check=True, capture_output=True, text=True).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        name, _, version = parts[2].partition('@')
        syms.append((name, version.lstrip('@')))
    names = [n for n, _ in syms]
    demangled = subprocess.run(['c++filt'], input='\n'.join(names), check=True,
                               capture_output=True, text=True).stdout.splitlines()
    return [(n, d, v) for (n, v), d in zip(syms, demangled)]


# What libkiln may need at load (DT_NEEDED): the C library and the dynamic loader.
LOAD_NEEDED = re.compile(r'^(libc\.so\.\d+|ld-linux[-\w.]*\.so\.\d+)$')


def needed(lib):
    out = subprocess.run(['readelf', '-d', '-W', lib], check=True, capture_output=True,
                         text=True).stdout
    return re.findall(r'\(NEEDED\)\s+Shared library: \[([^\]]+)\]', out)


def main():
    libkiln, link, release = sys.argv[1:4]
    problems = []
    for lib in needed(libkiln):
        if not LOAD_NEEDED.match(lib):
            problems.append(f'libkiln needs {lib} at load (only the C library and the dynamic '
                            f'loader: open it when first used, as sqlite_api.cpp does)')
    public = private = 0
    for name, shown, version in dynamic_symbols(libkiln):
        if name in ('KILN_0', f'KILN_PRIVATE_{release}') and not version:
            continue  # the version definitions themselves
        if version == 'KILN_0':
            public += 1
            c_api = name.startswith('kiln_') and shown == name
            if not (c_api or PUBLIC_CXX.match(shown)):
                problems.append(f'libkiln exports {shown} as public API (KILN_0)')
        elif version == f'KILN_PRIVATE_{release}':
            private += 1
            if name != BRIDGE:
                problems.append(f'libkiln exports {shown} for libkiln-compiler (only {BRIDGE} '
                                f'crosses: add a call to src/bridge/calls.inc instead)')
        else:
            problems.append(f'libkiln exports {shown} under version "{version or "(none)"}"')
    if private != 1:
        problems.append(f'libkiln exports {private} symbols for libkiln-compiler, not 1 '
                        f'({BRIDGE})')
    link_syms = [s for n, s, v in dynamic_symbols(link) if n != v]
    for shown in link_syms:
        if not shown.startswith('kiln_link_'):
            problems.append(f'libkiln-link exports {shown}')
    compiler_api = 0
    if len(sys.argv) > 4:
        # What libkiln-compiler imports from libkiln: the public API and the
        # bridge, nothing else of libkiln's (its private node holds the
        # bridge alone, so a second import could only be a public one).
        out = subprocess.run(['nm', '-D', '--undefined-only', '--with-symbol-versions',
                              sys.argv[4]], check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            sym = line.split()[-1]
            name, _, version = sym.partition('@')
            if version.lstrip('@').startswith('KILN_PRIVATE') and name != BRIDGE:
                problems.append(f'libkiln-compiler imports {name} from libkiln\'s private node')
        for name, shown, _ in dynamic_symbols(sys.argv[4]):
            if KILN_SYMBOL.match(shown):
                if COMPILER_CXX.match(shown) or False:
                    compiler_api += 1
                else:
                    problems.append(f'libkiln-compiler exports {shown}')
    print(f'libkiln: {public} public symbols (KILN_0), {private} for libkiln-compiler '
          f'(KILN_PRIVATE_{release}); libkiln-link: {len(link_syms)}; libkiln-compiler: '
          f'{compiler_api} of namespace kiln')
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
