#!/usr/bin/env python3
"""The functions an NVIDIA image may leave undefined because the CUDA driver
supplies them when it loads the module, derived from an installed CUDA
toolkit; written as a sorted list of C string literals for src/core/check.cpp.

  cuda_driver_symbols.py --cuda DIR --out FILE [--arch sm_90]

The candidates come from the toolkit itself:
  - the device functions its headers declare `extern ... __device__
    __cudart_builtin__` (device-side CUDA runtime and graph API:
    cudaGraphSetConditional, cudaGraphLaunch, ...), less those that
    libcudadevrt defines (cudaMalloc, __cudaCDP2LaunchDevice, ...: Kiln links
    libcudadevrt itself);
  - the functions libcudadevrt leaves undefined (its system calls into the
    driver: __cuda_syscall_*, cnp*, malloc, free), read from the toolkit's
    nvlink linking libcudadevrt relocatably;
  - the PTX ISA's system calls vprintf and __assertfail, which the compilers
    declare (no toolkit header declares vprintf).
The toolkit's own linker then decides: nvlink links one kernel calling every
candidate, with no library, and a candidate is kept only if nvlink leaves it
undefined for the driver rather than refusing it ("Undefined reference"):
some declarations (CDP1's cudaEventRecordWithFlags) have no definition
anywhere and must stay errors. The result is what nvlink itself accepts.

Exit status 0 with FILE written, 1 with the reason on stderr (the build then
uses the committed list, src/core/cuda_driver_symbols.inc)."""

import argparse
import glob
import os
import re
import struct
import subprocess
import sys
import tempfile

# The PTX ISA's system calls ("System Calls" in the PTX ISA manual): the
# compilers declare them, the driver defines them.
PTX_SYSTEM_CALLS = ['vprintf', '__assertfail', 'malloc', 'free']


def fail(why):
    sys.stderr.write(f'cuda_driver_symbols: {why}\n')
    sys.exit(1)


def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    return re.sub(r'//[^\n]*', ' ', text)


def declared_device_builtins(include):
    """Names the headers declare extern __device__ __cudart_builtin__ and not
    __host__ (the host-and-device ones are libc and math, which libdevice or
    the host provides), without a body."""
    names = set()
    headers = sorted(glob.glob(os.path.join(include, '*.h')) +
                     glob.glob(os.path.join(include, 'crt', '*.h')))
    for h in headers:
        with open(h, encoding='utf-8', errors='replace') as f:
            text = strip_comments(f.read())
        # Attribute macros with arguments (__DEPRECATED__("..."),
        # __CDPRT_DEPRECATED(f)) would end the declaration's prefix early.
        text = re.sub(r'\b__[A-Z_]+\s*\((?:"[^"]*"|[^()"])*\)', ' ', text)
        for m in re.finditer(r'\bextern\b([^;{}()"]*?)\b([A-Za-z_]\w*)\s*\(', text):
            attrs = m.group(1).split()
            if '__device__' in attrs and '__cudart_builtin__' in attrs and \
                    '__host__' not in attrs and 'static' not in attrs:
                names.add(m.group(2))
    return names


def elf_functions(path):
    """(defined, undefined) global function names of an ELF64 file."""
    with open(path, 'rb') as f:
        data = f.read()
    if data[:4] != b'\x7fELF' or data[4] != 2 or data[5] != 1:
        fail(f'{path} is not a little-endian ELF64 file')
    shoff, = struct.unpack_from('<Q', data, 0x28)
    shentsize, shnum = struct.unpack_from('<HH', data, 0x3A)
    sections = [struct.unpack_from('<IIQQQQIIQQ', data, shoff + i * shentsize)
                for i in range(shnum)]
    defined, undefined = set(), set()
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]
        off, size, entsize = sh[4], sh[5], sh[9] or 24
        for i in range(size // entsize):
            name, info, _other, shndx, _value, _size = struct.unpack_from(
                '<IBBHQQ', data, off + i * entsize)
            if info & 0xF != 2 or info >> 4 == 0:  # STT_FUNC, not STB_LOCAL
                continue
            start = strtab[4] + name
            end = data.index(b'\0', start)
            sym = data[start:end].decode('utf-8', 'replace')
            (undefined if shndx == 0 else defined).add(sym)
    return defined, undefined


def run(cmd, what):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, (r.stdout + r.stderr).strip(), what


def ptx_calling(names, arch):
    lines = ['.version 7.8', f'.target {arch}', '.address_size 64']
    lines += [f'.extern .func {n}();' for n in names]
    lines += ['.visible .entry kiln_probe() {']
    lines += [f'  call {n}, ();' for n in names]
    lines += ['  ret;', '}']
    return '\n'.join(lines) + '\n'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--cuda', required=True, help='the CUDA toolkit root')
    ap.add_argument('--out', required=True)
    ap.add_argument('--arch', default='sm_90')
    a = ap.parse_args()

    include = os.path.join(a.cuda, 'include')
    ptxas = os.path.join(a.cuda, 'bin', 'ptxas')
    nvlink = os.path.join(a.cuda, 'bin', 'nvlink')
    devrt = [p for p in [os.path.join(a.cuda, 'lib64', 'libcudadevrt.a')] +
             sorted(glob.glob(os.path.join(a.cuda, 'targets', '*', 'lib', 'libcudadevrt.a')))
             if os.path.exists(p)]
    for need in (os.path.join(include, 'cuda_device_runtime_api.h'), ptxas, nvlink):
        if not os.path.exists(need):
            fail(f'{need} not found')
    if not devrt:
        fail(f'no libcudadevrt.a in {a.cuda}')
    devrt_dir = os.path.dirname(devrt[0])

    declared = declared_device_builtins(include)
    if 'cudaGraphLaunch' not in declared and 'cudaMalloc' not in declared:
        fail(f'no device runtime declarations found in {include}')

    with tempfile.TemporaryDirectory(prefix='kiln-driver-symbols') as tmp:
        def assemble(ptx_text, name):
            """The object, or (None, names ptxas refuses for this arch)."""
            ptx, obj = os.path.join(tmp, name + '.ptx'), os.path.join(tmp, name + '.o')
            with open(ptx, 'w') as f:
                f.write(ptx_text)
            rc, out, _ = run([ptxas, f'-arch={a.arch}', '-c', ptx, '-o', obj], 'ptxas')
            if rc == 0:
                return obj, set()
            refused = set(re.findall(r"Unsupported Function '([^']+)'", out))
            if not refused:
                fail(f'ptxas failed on {name}.ptx: {out}')
            return None, refused

        # libcudadevrt whole, relocatable: what it defines, what it leaves
        # to the driver.
        empty, _ = assemble(ptx_calling([], a.arch), 'empty')
        if not empty:
            fail('ptxas cannot assemble an empty kernel')
        whole = os.path.join(tmp, 'devrt.cubin')
        rc, out, _ = run([nvlink, f'-arch={a.arch}', '-r', '--keep-system-libraries', empty,
                          f'-L{devrt_dir}', '-lcudadevrt', '-o', whole], 'nvlink -r')
        if rc != 0:
            fail(f'nvlink could not link libcudadevrt relocatably: {out}')
        devrt_defined, devrt_undefined = elf_functions(whole)

        candidates = sorted((declared - devrt_defined) | devrt_undefined |
                            set(PTX_SYSTEM_CALLS))
        # A final link of a kernel calling them all, with no library: every
        # candidate ptxas (unsupported on this arch: CDP1's
        # cudaDeviceSynchronize) or nvlink refuses (defined by no one, or only
        # by libcudadevrt) is dropped, until it links.
        for _ in range(len(candidates) + 1):
            obj, refused = assemble(ptx_calling(candidates, a.arch), 'probe')
            if not obj:
                candidates = [c for c in candidates if c not in refused]
                continue
            image = os.path.join(tmp, 'probe.cubin')
            rc, out, _ = run([nvlink, f'-arch={a.arch}', obj, '-o', image], 'nvlink')
            if rc == 0:
                break
            refused = set(re.findall(r"Undefined reference to '([^']+)'", out))
            if not refused:
                fail(f'nvlink failed: {out}')
            candidates = [c for c in candidates if c not in refused]
        else:
            fail('nvlink kept refusing')
        _, left = elf_functions(image)
        supplied = sorted(c for c in candidates if c in left)

    version = ''
    vfile = os.path.join(include, 'cuda.h')
    if os.path.exists(vfile):
        m = re.search(r'#define\s+CUDA_VERSION\s+(\d+)', open(vfile, errors='replace').read())
        if m:
            v = int(m.group(1))
            version = f' {v // 1000}.{v % 1000 // 10}'
    text = ['// Functions the CUDA driver supplies when it loads a module: an NVIDIA image',
            '// may leave them undefined. Generated by cmake/cuda_driver_symbols.py from',
            f'// CUDA{version} for {a.arch}: the device functions its headers declare',
            '// __cudart_builtin__ that libcudadevrt does not define, the functions',
            '// libcudadevrt leaves undefined, and the PTX system calls, each kept only if',
            "// the toolkit's nvlink leaves it undefined rather than refusing it.",
            '// The build derives this list at configure time from the toolkit it finds',
            '// (cmake/KilnCudaDriverSymbols.cmake); src/core/cuda_driver_symbols.inc, the',
            '// same output committed, stands in where it finds none. Regenerate with',
            '//   python3 cmake/cuda_driver_symbols.py --cuda <toolkit>',
            '//       --out src/core/cuda_driver_symbols.inc',
            '// Sorted (byte order).']
    text += [f'"{s}",' for s in sorted(supplied, key=lambda s: s.encode())]
    new = '\n'.join(text) + '\n'
    old = open(a.out).read() if os.path.exists(a.out) else None
    if old != new:
        with open(a.out + '.tmp', 'w') as f:
            f.write(new)
        os.replace(a.out + '.tmp', a.out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
