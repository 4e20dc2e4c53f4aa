#!/usr/bin/env python3
"""Checks Kiln's layering on the sources, against the graph the build declares.

The build writes the declared graph (cmake/KilnLayers.cmake) to
<build>/layers/manifest.txt: one line per layer, "name: dep;dep [llvm]", and a
"libkiln:" line listing the loader's layers. This check fails when
  - a file under src/<layer>/ includes a header of a layer <layer> does not
    declare (an upward or sideways include), or climbs out with "../";
  - a file above the storage layer includes one of storage/local/ (the cache
    file's own headers: the layers above see the records, storage/records.h);
  - a loader layer (libkiln) includes an LLVM, lld or clang header, or depends,
    directly or not, on a layer marked [llvm];
  - a tool (tools/*) includes a header of any layer: the tools are clients of
    the public API (include/kiln/) and compile against the installed headers;
  - the declared graph has a cycle or names an unknown layer.
--compile CXX checks the build's own enforcement: a file in the core layer that
includes a storage header must fail to compile with core's include path, and one
that includes a support header must compile.
--self-test damages a copy of the tree in the ways above and expects each to be
caught, so this check cannot pass vacuously.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
LLVM_HEADER = re.compile(r'^(llvm|llvm-c|lld|clang)/')
SOURCE_EXT = ('.h', '.hpp', '.cpp', '.c', '.def', '.inc')
# The cache file's own headers: the storage layer's private part. The layers
# above reach the records through storage/records.h and storage/storage.h.
PRIVATE_PART = 'storage/local/'


def read_manifest(path):
    layers, loader = {}, []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            name, _, rest = line.partition(':')
            name = name.strip()
            llvm = '[llvm]' in rest
            deps = [d for d in re.split(r'[;\s]+', rest.replace('[llvm]', '')) if d]
            if name == 'libkiln':
                loader = deps
            else:
                layers[name] = {'deps': set(deps), 'llvm': llvm}
    return layers, loader


def closure(layers, name, seen=None):
    seen = set() if seen is None else seen
    for d in layers[name]['deps']:
        if d not in seen:
            seen.add(d)
            closure(layers, d, seen)
    return seen


def check_graph(layers, loader):
    problems = []
    for name, info in layers.items():
        for d in info['deps']:
            if d not in layers:
                problems.append(f'layer {name} declares unknown layer {d}')
    state = {}

    def visit(n, path):
        if state.get(n) == 1:
            problems.append('layers form a cycle: ' + ' -> '.join(path + [n]))
            return
        if state.get(n) == 2:
            return
        state[n] = 1
        for d in sorted(layers[n]['deps']):
            if d in layers:
                visit(d, path + [n])
        state[n] = 2

    for n in sorted(layers):
        visit(n, [])
    if problems:
        return problems
    for n in loader:
        if n not in layers:
            problems.append(f'libkiln names unknown layer {n}')
            continue
        for d in sorted({n} | closure(layers, n)):
            if layers[d]['llvm']:
                problems.append(f'loader layer {n} depends on {d}, which uses LLVM')
    return problems


def includes(path):
    with open(path, errors='replace') as f:
        text = f.read()
    for m in INCLUDE.finditer(text):
        line = text.count('\n', 0, m.start()) + 1
        yield line, m.group(1), m.group(2)


def check_sources(root, layers, loader):
    problems = []
    src = os.path.join(root, 'src')
    for dirpath, _, files in os.walk(src):
        rel_dir = os.path.relpath(dirpath, src)
        if rel_dir == '.':
            continue
        layer = rel_dir.split(os.sep)[0]
        if layer not in layers:
            problems.append(f'src/{rel_dir}: directory of no declared layer')
            continue
        # libkiln-link (src/link/lld) is lld itself: LLVM is its business.
        llvm_ok = layers[layer]['llvm'] or rel_dir.startswith(os.path.join('link', 'lld'))
        allowed = {layer} | layers[layer]['deps']
        for fn in sorted(files):
            if not fn.endswith(SOURCE_EXT):
                continue
            path = os.path.join(dirpath, fn)
            where = os.path.relpath(path, root)
            for line, kind, inc in includes(path):
                if kind == '"':
                    if '..' in inc.split('/'):
                        problems.append(f'{where}:{line}: includes "{inc}": no "../" across directories')
                        continue
                    top = inc.split('/')[0]
                    if inc.startswith(PRIVATE_PART) and layer != 'storage':
                        problems.append(f'{where}:{line}: layer {layer} includes "{inc}": above '
                                        f'storage, a layer sees the records through storage/*.h, '
                                        f'never the cache file\'s own headers')
                        continue
                    if '/' in inc and top in layers and top not in allowed:
                        problems.append(f'{where}:{line}: layer {layer} includes "{inc}" of layer '
                                        f'{top}, which it does not declare (declared: '
                                        f'{", ".join(sorted(layers[layer]["deps"])) or "none"})')
                elif LLVM_HEADER.match(inc) and not llvm_ok:
                    problems.append(f'{where}:{line}: layer {layer} has no LLVM, but includes <{inc}>')
    tools = os.path.join(root, 'tools')
    if os.path.isdir(tools):
        for fn in sorted(os.listdir(tools)):
            if not fn.endswith(SOURCE_EXT):
                continue
            path = os.path.join(tools, fn)
            for line, kind, inc in includes(path):
                top = inc.split('/')[0]
                if kind == '"' and top in layers:
                    problems.append(f'tools/{fn}:{line}: a tool uses the public API only '
                                    f'(<kiln/...>), but includes "{inc}" of layer {top}')
                elif kind == '<' and LLVM_HEADER.match(inc):
                    problems.append(f'tools/{fn}:{line}: a tool links libkiln only, but includes <{inc}>')
    return problems


def check(root, manifest):
    layers, loader = read_manifest(manifest)
    if not layers or not loader:
        return [f'{manifest}: no layers or no libkiln line']
    return check_graph(layers, loader) or check_sources(root, layers, loader)


def check_compile(cxx, root, manifest):
    """The build's own enforcement: core's include path reaches support, not storage."""
    stage = os.path.join(os.path.dirname(manifest))
    flags = ['-std=c++20', '-fsyntax-only', '-I' + os.path.join(stage, 'core'),
             '-I' + os.path.join(stage, 'support'), '-I' + os.path.join(root, 'include')]
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        cases = {'down.cpp': ('#include "support/hash.h"\n', True),
                 'up.cpp': ('#include "storage/local/store.h"\n', False)}
        for name, (text, should_compile) in cases.items():
            path = os.path.join(tmp, name)
            with open(path, 'w') as f:
                f.write(text + 'int main() { return 0; }\n')
            r = subprocess.run([cxx] + flags + [path], capture_output=True, text=True)
            if should_compile and r.returncode != 0:
                problems.append(f'core cannot include a support header: {r.stderr.strip()}')
            if not should_compile and r.returncode == 0:
                problems.append('a core file including a storage header compiled: the build does '
                                'not enforce the layers')
            if not should_compile and r.returncode != 0 and 'No such file' not in r.stderr:
                problems.append(f'the upward include failed for another reason: {r.stderr.strip()}')
    return problems


def self_test(root, manifest):
    """Each kind of damage must be caught; the clean tree must pass."""
    failures = []
    clean = check(root, manifest)
    if clean:
        failures.append('the tree itself does not pass:\n  ' + '\n  '.join(clean))
    damages = [
        ('src/core/keys.cpp', '#include "storage/local/store.h"\n', 'upward include'),
        ('src/image/image.cpp', '#include <llvm/IR/Module.h>\n', 'LLVM in a loader layer'),
        ('src/request/plan.cpp', '#include "storage/local/store.h"\n',
         'a layer above storage including the cache file\'s own header'),
        ('src/support/hash.cpp', '#include "../core/keys.h"\n', '"../" include'),
        ('tools/kiln-inspect.cpp', '#include "request/request.h"\n', 'tool including a compiler layer'),
        ('tools/kiln-precompile.cpp', '#include "storage/local/store.h"\n',
         'tool including a loader layer'),
    ]
    for rel, line, what in damages:
        with tempfile.TemporaryDirectory() as tmp:
            for part in ('src', 'tools'):
                shutil.copytree(os.path.join(root, part), os.path.join(tmp, part), symlinks=True)
            path = os.path.join(tmp, rel)
            with open(path) as f:
                text = f.read()
            with open(path, 'w') as f:
                f.write(line + text)
            if not check(tmp, manifest):
                failures.append(f'{what} ({rel}) was not caught')
    with tempfile.TemporaryDirectory() as tmp:
        layers_text = open(manifest).read().replace('core: support', 'core: support;image')
        bad = os.path.join(tmp, 'manifest.txt')
        with open(bad, 'w') as f:
            f.write(layers_text)
        if not check(root, bad):
            failures.append('a cycle in the declared graph was not caught')
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--root', required=True)
    ap.add_argument('--manifest', required=True)
    ap.add_argument('--compile', metavar='CXX')
    ap.add_argument('--self-test', action='store_true')
    a = ap.parse_args()
    if a.self_test:
        problems = self_test(a.root, a.manifest)
    elif a.compile:
        problems = check_compile(a.compile, a.root, a.manifest)
    else:
        problems = check(a.root, a.manifest)
    for p in problems:
        print(p)
    if problems:
        print(f'{len(problems)} layering problem(s)', file=sys.stderr)
        return 1
    print('layers: ok')
    return 0


if __name__ == '__main__':
    sys.exit(main())
