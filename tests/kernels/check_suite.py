#!/usr/bin/env python3
"""Kiln's real-kernel suite: CUDA and HIP sources as users write them,
compiled to LLVM IR by clang, precompiled by kiln-precompile for each GPU
target, each root's image exported with kiln-inspect and checked as a driver
would see it. Prints a feature x target table and the first error of each
failing case; exits 0 when every case passes, 1 when one fails, 77 when the
language's toolkit headers are missing (ctest: skipped).

  check_suite.py --lang cuda --precompile BIN --inspect BIN --clang CLANG \
      --llvm-dis LLVM_DIS --include KILN_INCLUDE --work DIR [-j 2]

The IR is compiled at test time, into DIR/<target>/<case>/, next to each
case's cache and exported images (kept for inspection; DIR is emptied first).
See README.md for the clang flags and why each is there."""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import elfcheck  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77

CUDA_TARGETS = ['sm_80', 'sm_90', 'sm_90a']
HIP_TARGETS = ['gfx942']

# Undefined symbols an NVIDIA image may keep: the CUDA driver supplies them
# at load time (printf, assert and the device heap, the device-side graph
# API, the device runtime's system calls; reserved shared memory). The
# functions are the list the build derived from the CUDA toolkit
# (--driver-symbols: generated/kiln_cuda_driver_symbols.inc), the same one
# Kiln's own check uses. Everything else must be linked in, libdevice and
# libcudadevrt included. AMD images resolve everything.
NVIDIA_DRIVER_SYMBOLS = set()
NVIDIA_DRIVER_PREFIXES = ('__cuda_syscall_', '.nv.reservedSmem')
COMMITTED_DRIVER_SYMBOLS = os.path.join(HERE, '..', '..', 'src', 'core', 'cuda_driver_symbols.inc')


def read_driver_symbols(path):
    """The C string literals of a kiln_cuda_driver_symbols.inc."""
    with open(path) as f:
        return set(re.findall(r'^"([^"]+)",$', f.read(), flags=re.M))


class Case:
    """One feature: a CUDA source, a HIP source, or both, and what the image
    of each kernel must hold beyond the kernel itself."""

    def __init__(self, feature, cuda=None, hip=None, rdc=False, cuda_targets=('sm_80', 'sm_90'),
                 na=None, entries=None, objects=None, min_kernels=1, amd_args=None,
                 min_params=None, driver_calls=None):
        self.feature = feature
        self.sources = {'cuda': cuda, 'hip': hip}
        self.rdc = rdc                      # CUDA: relocatable device code (-fgpu-rdc)
        self.cuda_targets = list(cuda_targets)
        self.na = dict(na or {})            # target -> why the case is not built for it
        self.entries = entries or {}        # kernel -> other kernels its image must define
        self.objects = objects or {}        # kernel -> globals its image must define by name
        self.min_kernels = min_kernels
        self.amd_args = amd_args or {}      # kernel -> hidden argument kinds it must request
        self.min_params = min_params or {}  # kernel -> least parameter block size in bytes
        self.driver_calls = driver_calls or {}  # kernel -> functions its NVIDIA image leaves to the driver

    def name(self, lang):
        src = self.sources[lang]
        return os.path.splitext(src)[0] if src else None

    def targets(self, lang):
        return self.cuda_targets if lang == 'cuda' else HIP_TARGETS


GLOBALS = {
    '_Z9eval_polyPKfPfi': ['poly_coeffs', 'poly_degree', 'evaluations', 'last_value'],
    '_Z13square_lookupPKiPfi': ['kSquares'],
    '_Z13read_countersPjPf': ['evaluations', 'last_value'],
}

CASES = [
    Case('printf', 'printf.cu', 'printf.hip',
         amd_args={'_Z9say_helloi': ['hidden_hostcall_buffer'],
                   '_Z12print_valuesPKfi': ['hidden_hostcall_buffer']}),
    Case('assert', 'assert.cu', 'assert.hip'),
    Case('malloc/free, new/delete', 'malloc.cu', 'malloc.hip'),
    Case('dynamic parallelism', 'dynamic_parallelism.cu', None, rdc=True,
         na={'gfx942': 'HIP has no device-side kernel launch'},
         entries={'_Z15launch_childrenPiiS_': ['_Z10fill_childPiii', '_Z11scale_childPiii']}),
    Case('cooperative groups', 'cooperative_groups.cu', 'cooperative_groups.hip', rdc=True),
    Case('__constant__/__device__ globals', 'globals.cu', 'globals.hip', objects=GLOBALS),
    Case('extern __shared__', 'dynamic_shared.cu', 'dynamic_shared.hip'),
    Case('atomics', 'atomics.cu', 'atomics.hip'),
    Case('warp shuffles and votes', 'warp.cu', 'warp.hip'),
    Case('half and bfloat16', 'half_bf16.cu', 'half_bf16.hip'),
    Case('device math (libdevice/ocml)', 'math.cu', 'math.hip'),
    Case('inline asm (PTX/GCN)', 'inline_ptx.cu', 'inline_asm.hip'),
    Case('tensor cores (mma.sync/MFMA)', 'mma_sync.cu', 'mfma.hip'),
    Case('tensor cores (wgmma)', 'wgmma.cu', None, cuda_targets=['sm_90a'],
         na={'sm_80': 'wgmma exists only on sm_90a',
             'sm_90': 'wgmma needs the arch-specific sm_90a target, not sm_90',
             'gfx942': 'NVIDIA only (AMD matrix cores: the MFMA row)'}),
    Case('templates (224 kernels)', 'templates.cu', 'templates.hip', min_kernels=200),
    Case('parameters over 4 KiB', 'big_params.cu', 'big_params.hip',
         # The struct, two pointers and an int.
         min_params={'_Z12apply_filter6FilterPKfPfi': 6152 + 20,
                     '_Z6lookup6LookupPKiPii': 9600 + 20}),
    Case('kiln_deferred', 'deferred.cu', 'deferred.hip'),
    Case('device graph control (cudaGraphSetConditional)', 'graph_conditional.cu', None,
         cuda_targets=['sm_90'],
         na={'sm_80': 'the CUDA samples build conditional nodes for sm_90',
             'gfx942': 'HIP has no conditional graph nodes'},
         driver_calls={k: ['cudaGraphSetConditional'] for k in
                       ['_Z12if_conditionPKcy', '_Z10while_bodyPcy', '_Z12clear_branchPKiyy']}),
]

# A case's source compiles once per target: clang specialises the IR for
# the arch (target-cpu, target features, __CUDA_ARCH__).
ARCH_FLAG = {'cuda': '--cuda-gpu-arch=', 'hip': '--offload-arch='}


class Result:
    def __init__(self, case, lang, target):
        self.case, self.lang, self.target = case, lang, target
        self.stage = {'compiled': None, 'precompiled': None, 'linked': None, 'checked': None}
        self.error = None         # first error: (stage, text)
        self.kernels = []

    def fail(self, stage, text):
        self.stage[stage] = False
        if self.error is None:
            self.error = (stage, text.strip())

    @property
    def ok(self):
        return all(v is True for v in self.stage.values())


def find_cuda(arg):
    candidates = [arg] if arg else []
    candidates += [os.environ.get('CUDA_HOME'), os.environ.get('CUDA_PATH')]
    nvcc = shutil.which('nvcc')
    if nvcc:
        candidates.append(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))))
    candidates.append('/usr/local/cuda')
    for c in candidates:
        if c and os.path.isfile(os.path.join(c, 'include', 'cuda_runtime.h')):
            return c
    return None


def find_rocm(arg):
    candidates = [arg] if arg else []
    candidates += [os.environ.get('ROCM_PATH'), '/usr', '/opt/rocm']
    for c in candidates:
        if c and os.path.isfile(os.path.join(c, 'include', 'hip', 'hip_runtime.h')):
            return c
    return None


def clang_command(args, lang, case, target, out):
    src = os.path.join(HERE, lang, case.sources[lang])
    cmd = [args.clang, '-x', lang, '--cuda-device-only', ARCH_FLAG[lang] + target, '-O2',
           '-emit-llvm', '-c', '-I', args.include]
    if lang == 'cuda':
        cmd += ['--cuda-path=' + args.cuda_path, '-nocudalib', '-Wno-unknown-cuda-version']
        cccl = os.path.join(args.cuda_path, 'include', 'cccl')
        if os.path.isdir(cccl):  # CUDA 13 keeps libcu++ (cuda/std/...) here
            cmd += ['-isystem', cccl]
        if case.rdc:
            cmd.append('-fgpu-rdc')
    else:
        cmd += ['--rocm-path=' + args.rocm_path, '-nogpulib', '-D__AMDGCN_WAVEFRONT_SIZE=64']
    return cmd + [src, '-o', out]


KERNEL_RE = re.compile(r'^define\b[^@]*\b(?:ptx_kernel|amdgpu_kernel)\b[^@]*@("(?:[^"\\]|\\.)*"|[\w.$]+)\(',
                       re.M)


def ir_kernels(args, bc):
    r = subprocess.run([args.llvm_dis, bc, '-o', '-'], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f'llvm-dis failed: {r.stderr.strip()}')
    return [m.group(1).strip('"') for m in KERNEL_RE.finditer(r.stdout)]


def run(cmd, timeout=600):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def first_lines(text, n=6):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    more = len(lines) - n
    return '\n'.join(lines[:n]) + (f'\n... ({more} more lines)' if more > 0 else '')


def check_nvidia(elf, case, target, kernel):
    problems = []
    if elf.machine != elfcheck.EM_CUDA:
        problems.append(f'ELF machine {elf.machine}, want EM_CUDA ({elfcheck.EM_CUDA})')
    sm = elf.cuda_sm()
    want_sm = int(re.match(r'sm_(\d+)', target).group(1))
    if sm != want_sm:
        problems.append(f'ELF flags 0x{elf.flags:x} name sm_{sm}, want {target}')
    defined = {s.name: s for s in elf.symbols if s.defined}
    # The root is looked up by name (cuModuleGetFunction): a global entry.
    # Kernels it launches from the device need only be entries in its image
    # (the launch takes their address; nvcc keeps static kernels local too).
    for k in [kernel] + case.entries.get(kernel, []):
        s = defined.get(k)
        if s is None:
            problems.append(f'kernel {k} is not a defined symbol (defined functions: '
                            f'{sorted(x.name for x in defined.values() if x.type == elfcheck.STT_FUNC)[:4]})')
        elif s.type != elfcheck.STT_FUNC or (k == kernel and s.bind != elfcheck.STB_GLOBAL):
            problems.append(f'kernel {k} is {s.describe()}, want a '
                            f'{"GLOBAL " if k == kernel else ""}FUNC')
        elif not s.other & elfcheck.STO_CUDA_ENTRY:
            problems.append(f'kernel {k} is not marked as an entry (st_other 0x{s.other:x})')
    least = case.min_params.get(kernel)
    if least:
        size = elf.cuda_param_size(kernel)
        if size is None or size < least:
            problems.append(f'parameter bank of {kernel}: {size} bytes recorded, want >= {least}')
    problems += check_objects(elf, case, kernel, amd=False)
    undefined = sorted({s.name for s in elf.symbols if not s.defined and s.name and
                        s.name not in NVIDIA_DRIVER_SYMBOLS and
                        not s.name.startswith(NVIDIA_DRIVER_PREFIXES)})
    if undefined:
        problems.append(f'undefined symbols the driver does not supply: {", ".join(undefined)}')
    for f in case.driver_calls.get(kernel, []):
        if not any(s.name == f and not s.defined for s in elf.symbols):
            problems.append(f'{f} is not left undefined for the driver')
    return problems


def check_objects(elf, case, kernel, amd):
    problems = []
    for name in case.objects.get(kernel, []):
        s = next((s for s in elf.symbols if s.name == name and s.defined), None)
        if s is None:
            problems.append(f'global {name} is not defined by name (the host finds it with '
                            f'{"hipModuleGetGlobal" if amd else "cuModuleGetGlobal"})')
        elif s.type != elfcheck.STT_OBJECT or s.bind not in (elfcheck.STB_GLOBAL, elfcheck.STB_WEAK):
            problems.append(f'global {name} is {s.describe()}, want a GLOBAL or WEAK OBJECT')
        elif amd and s.visibility in (elfcheck.STV_HIDDEN, elfcheck.STV_INTERNAL):
            problems.append(f'global {name} is {s.describe()}, so the loader cannot find it by name')
    return problems


def check_amd(elf, case, target, kernel):
    problems = []
    if elf.machine != elfcheck.EM_AMDGPU:
        problems.append(f'ELF machine {elf.machine}, want EM_AMDGPU ({elfcheck.EM_AMDGPU})')
    want_mach = elfcheck.AMDGPU_MACH.get(target.split(':')[0])
    if want_mach is not None and elf.amdgpu_mach() != want_mach:
        problems.append(f'ELF flags 0x{elf.flags:x}: mach 0x{elf.amdgpu_mach():x}, want 0x{want_mach:x} ({target})')
    defined = {}
    for s in elf.symbols:
        if s.defined:
            defined.setdefault(s.name, s)
    fn, kd = defined.get(kernel), defined.get(kernel + '.kd')
    if fn is None:
        problems.append(f'kernel {kernel} is not a defined symbol (defined global functions: '
                        f'{sorted(x.name for x in defined.values() if x.type == elfcheck.STT_FUNC and x.bind == elfcheck.STB_GLOBAL)[:4]})')
    elif fn.type != elfcheck.STT_FUNC or fn.bind != elfcheck.STB_GLOBAL:
        problems.append(f'kernel {kernel} is {fn.describe()}, want a GLOBAL FUNC')
    if kd is None:
        problems.append(f'kernel descriptor {kernel}.kd is not a defined symbol')
    elif kd.type != elfcheck.STT_OBJECT or kd.bind != elfcheck.STB_GLOBAL:
        problems.append(f'kernel descriptor {kernel}.kd is {kd.describe()}, want a GLOBAL OBJECT')
    try:
        kernels = elfcheck.amdgpu_kernels(elf)
    except ValueError as e:
        problems.append(f'AMDGPU metadata: {e}')
        kernels = []
    meta = next((k for k in kernels if isinstance(k, dict) and k.get('.name') == kernel), None)
    if kernels and meta is None:
        problems.append(f'AMDGPU metadata lists no kernel named {kernel} (it lists '
                        f'{[k.get(".name") for k in kernels if isinstance(k, dict)][:4]})')
    if meta is not None:
        if meta.get('.symbol') != kernel + '.kd':
            problems.append(f'AMDGPU metadata of {kernel}: .symbol {meta.get(".symbol")!r}, want {kernel}.kd')
        for field in ('.sgpr_count', '.vgpr_count', '.kernarg_segment_size'):
            if not isinstance(meta.get(field), int):
                problems.append(f'AMDGPU metadata of {kernel} has no {field}')
        kinds = {a.get('.value_kind') for a in meta.get('.args', []) if isinstance(a, dict)}
        for kind in case.amd_args.get(kernel, []):
            if kind not in kinds:
                problems.append(f'AMDGPU metadata of {kernel}: no {kind} argument')
        least = case.min_params.get(kernel)
        size = meta.get('.kernarg_segment_size')
        if least and isinstance(size, int) and size < least:
            problems.append(f'AMDGPU metadata of {kernel}: kernarg segment {size} bytes, want >= {least}')
    problems += check_objects(elf, case, kernel, amd=True)
    undefined = sorted({s.name for s in elf.symbols if not s.defined and s.name})
    if undefined:
        problems.append(f'undefined symbols: {", ".join(undefined)}')
    return problems


def run_case(args, lang, case, target):
    res = Result(case, lang, target)
    work = os.path.join(args.work, target, case.name(lang))
    os.makedirs(os.path.join(work, 'images'), exist_ok=True)
    bc = os.path.join(work, case.name(lang) + '.bc')
    r = run(clang_command(args, lang, case, target, bc))
    if r.returncode != 0:
        res.fail('compiled', 'clang: ' + first_lines(r.stderr))
        return res
    res.stage['compiled'] = True
    try:
        res.kernels = ir_kernels(args, bc)
    except RuntimeError as e:
        res.fail('compiled', str(e))
        return res
    if len(res.kernels) < case.min_kernels:
        res.fail('compiled', f'the IR has {len(res.kernels)} kernels, want >= {case.min_kernels}')
        return res

    cache = args.shared_cache or os.path.join(work, 'cache.db')
    jobs = args.jobs if len(res.kernels) >= 100 else 1
    r = run([args.precompile, '--cache', cache, '--target', target, '--json', '-q', '-j', str(jobs), bc])
    try:
        report = json.loads(r.stdout)
    except ValueError:
        res.fail('precompiled', f'kiln-precompile exit {r.returncode}, no JSON report: '
                 + first_lines(r.stderr or r.stdout))
        return res
    with open(os.path.join(work, 'precompile.json'), 'w') as f:
        json.dump(report, f, indent=1)
    if 'jobs' not in report:  # the request itself failed: {"error": {...}, "exit_status": N}
        err = report.get('error') or {}
        res.fail('precompiled', f'kiln-precompile exit {r.returncode}: '
                 + first_lines(err.get('message', '') if isinstance(err, dict) else str(err)))
        return res
    failed = [j for j in report['jobs'] if j['status'] == 'failed']
    roots = {r_['name']: r_ for r_ in report['roots'] if r_['target'] == target}
    missing = sorted(set(res.kernels) - set(roots))
    if failed:
        res.fail('precompiled', f'{len(failed)} of {len(report["jobs"])} jobs failed; '
                 f'{failed[0]["entry"]}: ' + first_lines(failed[0].get('error', '')))
    elif missing:
        res.fail('precompiled', f'kernels without a root: {", ".join(missing[:5])}')
    else:
        res.stage['precompiled'] = True
    unlinked = [r_ for r_ in roots.values() if not r_.get('image')]
    if res.stage['precompiled'] and unlinked:
        first = unlinked[0]
        res.fail('linked', f'{len(unlinked)} of {len(roots)} roots have no image; {first["name"]}: '
                 + first_lines(first.get('error') or first.get('note') or 'no error given'))
    elif res.stage['precompiled']:
        res.stage['linked'] = True

    checked_any, bad = False, []
    for kernel in res.kernels:
        root = roots.get(kernel)
        if not root or not root.get('image'):
            continue
        ext = 'hsaco' if lang == 'hip' else 'cubin'
        path = os.path.join(work, 'images', f'{kernel}.{ext}')
        r = run([args.inspect, '--cache', cache, 'image', kernel, '--target', target, '-o', path])
        if r.returncode != 0:
            bad.append((kernel, ['kiln-inspect image: ' + first_lines(r.stderr)]))
            continue
        checked_any = True
        try:
            with open(path, 'rb') as f:
                elf = elfcheck.Elf(f.read())
            problems = (check_amd if lang == 'hip' else check_nvidia)(elf, case, target, kernel)
        except ValueError as e:
            problems = [f'unreadable image: {e}']
        if problems:
            bad.append((kernel, problems))
    if bad:
        kernel, problems = bad[0]
        res.fail('checked', f'{len(bad)} of {len(res.kernels)} images fail; {kernel}: '
                 + '; '.join(problems[:3]) + (f' (+{len(problems) - 3} more)' if len(problems) > 3 else ''))
    elif checked_any and res.stage['linked']:
        res.stage['checked'] = True
    return res


def cell(res):
    if res is None:
        return '-'
    marks = ''
    for stage in ('precompiled', 'linked', 'checked'):
        v = res.stage[stage]
        marks += '+' if v is True else 'x' if v is False else '.'
    if res.stage['compiled'] is False:
        return 'clang x'
    return ' '.join(marks)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--lang', action='append', choices=['cuda', 'hip'], required=True)
    p.add_argument('--precompile', required=True)
    p.add_argument('--inspect', required=True)
    p.add_argument('--clang', required=True)
    p.add_argument('--llvm-dis', required=True)
    p.add_argument('--include', required=True, help="Kiln's include directory (kiln/device.h)")
    p.add_argument('--work', required=True, help='scratch directory (emptied first)')
    p.add_argument('--cuda-path', help='CUDA toolkit (default: $CUDA_HOME, $CUDA_PATH, nvcc, /usr/local/cuda)')
    p.add_argument('--rocm-path', help='HIP headers prefix (default: $ROCM_PATH, /usr, /opt/rocm)')
    p.add_argument('--target', action='append', help='only these targets')
    p.add_argument('--case', action='append', help='only cases whose source name is this')
    p.add_argument('--shared-cache', help='precompile every case into this one cache (for the GPU check)')
    p.add_argument('-j', '--jobs', type=int, default=2)
    p.add_argument('--driver-symbols', default=COMMITTED_DRIVER_SYMBOLS,
                   help="the build's kiln_cuda_driver_symbols.inc (default: the committed list)")
    args = p.parse_args()

    # An installed prefix's CLIs, as the integration tests allow.
    bin_dir = os.environ.get('KILN_TEST_BIN_DIR')
    if bin_dir:
        args.precompile = os.path.join(bin_dir, 'kiln-precompile')
        args.inspect = os.path.join(bin_dir, 'kiln-inspect')

    langs = []
    for lang in dict.fromkeys(args.lang):
        if lang == 'cuda':
            args.cuda_path = find_cuda(args.cuda_path)
            if not args.cuda_path:
                print('kernels: CUDA skipped: no CUDA toolkit headers (include/cuda_runtime.h) in '
                      '--cuda-path, $CUDA_HOME, $CUDA_PATH, nvcc\'s prefix or /usr/local/cuda')
                continue
        else:
            args.rocm_path = find_rocm(args.rocm_path)
            if not args.rocm_path:
                print('kernels: HIP skipped: no HIP headers (include/hip/hip_runtime.h) in '
                      '--rocm-path, $ROCM_PATH, /usr or /opt/rocm (Debian: libamdhip64-dev)')
                continue
        langs.append(lang)
    if not langs:
        return SKIP
    for tool in (args.clang, args.llvm_dis, args.precompile, args.inspect):
        if not (os.path.isfile(tool) or shutil.which(tool)):
            print(f'kernels: {tool} not found')
            return 1
    NVIDIA_DRIVER_SYMBOLS.update(read_driver_symbols(args.driver_symbols))
    if 'vprintf' not in NVIDIA_DRIVER_SYMBOLS:
        print(f'kernels: {args.driver_symbols} lists no driver functions')
        return 1

    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    if args.shared_cache:
        for suffix in ('', '-wal', '-shm'):
            if os.path.exists(args.shared_cache + suffix):
                os.remove(args.shared_cache + suffix)

    targets = [t for lang in langs for t in (CUDA_TARGETS if lang == 'cuda' else HIP_TARGETS)
               if not args.target or t in args.target]
    units = []
    for case in CASES:
        for lang in langs:
            if case.sources[lang] is None:
                continue
            if args.case and case.name(lang) not in args.case:
                continue
            for t in case.targets(lang):
                if t in targets:
                    units.append((lang, case, t))
    # The big units first, so two workers finish together.
    units.sort(key=lambda u: -u[1].min_kernels)

    start = time.monotonic()
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(run_case, args, *u): u for u in units}
        for fut in concurrent.futures.as_completed(futures):
            lang, case, t = futures[fut]
            try:
                results[(case.feature, t)] = fut.result()
            except Exception as e:  # a crash of the harness is a failure, not a traceback
                res = Result(case, lang, t)
                res.fail('precompiled', f'harness error: {e!r}')
                results[(case.feature, t)] = res
    elapsed = time.monotonic() - start

    print(report(results, targets, langs, args))
    failures = [r for r in results.values() if not r.ok]
    print(f'\nkernels: {len(results) - len(failures)} of {len(results)} cases pass '
          f'({sum(len(r.kernels) for r in results.values())} kernels) in {elapsed:.1f} s')
    return 1 if failures else 0


def report(results, targets, langs, args):
    cases = [c for c in CASES if any(c.sources[l] for l in langs) or any(t in c.na for t in targets)]
    if args.case:
        cases = [c for c in cases if any(c.name(l) in args.case for l in langs)]
    width = max(len(c.feature) for c in cases) + 2
    lines = ['Kiln real-kernel suite. Each cell: precompiled, linked, checked',
             '(+ passed, x failed, . not reached; - not built for the target, n/a: see below).',
             '', 'feature'.ljust(width) + ''.join(t.ljust(10) for t in targets)]
    na, errors = [], []
    for c in cases:
        row = c.feature.ljust(width)
        for t in targets:
            lang = 'hip' if t.startswith('gfx') else 'cuda'
            res = results.get((c.feature, t))
            if res is None and t in c.na:
                row += 'n/a'.ljust(10)
                na.append(f'  {c.feature} on {t}: {c.na[t]}')
            elif res is None:
                row += '-'.ljust(10)
            else:
                row += cell(res).ljust(10)
                if res.error:
                    errors.append(f'  {c.feature} on {t} ({lang}/{c.sources[lang]}), {res.error[0]}:\n'
                                  + '\n'.join('      ' + l for l in res.error[1].splitlines()))
        lines.append(row)
    if na:
        lines += ['', 'n/a:'] + na
    if errors:
        lines += ['', 'First error of each failing case:'] + errors
    return '\n'.join(lines)


if __name__ == '__main__':
    sys.exit(main())
