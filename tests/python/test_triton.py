"""Triton under Kiln: the tutorial kernels precompiled ahead of time for
sm_80, sm_90 and gfx942 with no GPU, their launch metadata read back (from
Python and through libkiln's C API), keys that follow the producing Triton,
and Kiln as Triton's cache manager, with many processes at once (Triton
#11512's pattern) on a local disk and in rollback-journal (NFS) mode.
Skipped, with the reason, where Triton is not installed (the CMake-built
package's run); `pip install '.[triton]'` brings the pinned release."""
import ctypes
import json
import os
import pathlib
import subprocess
import sys

import pytest

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install '.[triton]')")

import conftest  # noqa: E402
import kiln  # noqa: E402
import kiln.triton  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from triton_kernels import KERNELS  # noqa: E402

TARGETS = ["sm_80", "sm_90", "gfx942"]


def _tool(name):
    return pathlib.Path(sys.executable).parent / name


@pytest.fixture(scope="module")
def precompiled(tmp_path_factory):
    cache = kiln.Cache(tmp_path_factory.mktemp("triton") / "kiln.db")
    out = {}
    for name, (fn, signature, constexprs) in KERNELS.items():
        for p in kiln.triton.precompile(fn, signature, constexprs, TARGETS, cache):
            out[(name, p.requested)] = p
    return cache, out


def test_pinned_triton_is_installed():
    assert triton.__version__ == kiln.triton.TRITON_VERSION


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(KERNELS))
def test_tutorial_kernel_is_imaged_under_its_name(precompiled, tmp_path, name, target):
    cache, out = precompiled
    p = out[(name, target)]
    assert p.name == name and p.target == kiln.triton.kiln_target(target)
    assert p.target == ("sm_90a" if target == "sm_90" else target)  # wgmma needs sm_90a
    assert len(p.job) == 32 and len(p.closure) == 32 and p.image
    # The image, written by the installed console script, holds the kernel.
    image = tmp_path / "image"
    subprocess.run([_tool("kiln-inspect"), "--cache", cache.path, "image", name,
                    "--target", p.target, "-o", image], check=True)
    data = image.read_bytes()
    assert data[:4] == b"\x7fELF"
    assert name.encode() in data
    if target.startswith("gfx"):
        assert (name + ".kd").encode() in data  # the kernel descriptor a HIP load needs
    meta = p.metadata
    assert meta["name"] == name and meta["kiln_target"] == p.target
    assert meta["kiln_closure"] == p.closure and meta["num_warps"] == 4
    assert meta["target"]["backend"] == ("hip" if target.startswith("gfx") else "cuda")
    if name == "matmul_kernel":
        assert meta["shared"] > 0  # tl.dot stages its tiles in shared memory


def test_metadata_read_back_matches_what_was_stored(precompiled):
    cache, out = precompiled
    for (name, target), p in out.items():
        assert kiln.triton.metadata(name, target, cache) == p.metadata


def test_metadata_through_the_c_api(precompiled):
    """libkiln alone (kiln.h, through ctypes): open the cache, load the
    metadata's host root, call it."""
    cache, out = precompiled
    lib = ctypes.CDLL(str(conftest.LIBRARY_DIR / "libkiln.so"))
    lib.kiln_last_error.restype = ctypes.c_char_p
    handle, image, fn = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    assert lib.kiln_cache_open(cache.path.encode(), ctypes.byref(handle)) == 0
    entry = kiln.triton.metadata_entry("softmax_kernel", "sm_90a").encode()
    assert lib.kiln_image_load(handle, entry, b"host", ctypes.byref(image)) == 0, lib.kiln_last_error()
    assert lib.kiln_image_lookup(image, entry, ctypes.byref(fn)) == 0, lib.kiln_last_error()
    text = ctypes.CFUNCTYPE(ctypes.c_char_p)(fn.value)()
    assert json.loads(text) == out[("softmax_kernel", "sm_90")].metadata
    lib.kiln_image_release(image)
    lib.kiln_cache_close(handle)


def test_second_precompile_is_cached_and_keys_follow_the_producer(precompiled):
    cache, out = precompiled
    fn, signature, constexprs = KERNELS["add_kernel"]
    again = kiln.triton.precompile(fn, signature, constexprs, ["sm_90"], cache)[0]
    assert again.job == out[("add_kernel", "sm_90")].job
    # Another Triton (another LLVM) producing the very same IR: another key.
    target = kiln.triton.gpu_target("sm_90")
    llir, _ = kiln.triton._front_end(fn, signature, constexprs, target, None)
    keys = set()
    for producer in ("triton 3.7.1 cuda fp-fusion=1", "triton 3.8.0 cuda fp-fusion=1",
                     "triton 3.7.1 cuda fp-fusion=0"):
        _, ir = kiln.triton._mark_producer(llir, producer)
        keys.add(cache.compile(ir, entries=["add_kernel"], targets=["sm_90a"], link=False).keys[0])
    assert len(keys) == 3
    assert out[("add_kernel", "sm_90")].job in keys


def test_load_needs_a_gpu(precompiled):
    cache, out = precompiled
    if kiln.present_target() == "host":
        with pytest.raises(kiln.UnavailableError, match="no GPU"):
            kiln.triton.load("add_kernel", cache)
        pytest.skip("no GPU here: a Triton kernel is loaded only on one (sm_XY or gfxNNN)")
    kernel = kiln.triton.load("add_kernel", cache)
    assert kernel.function != 0 and kernel.metadata["name"] == "add_kernel"


# --- Kiln as Triton's cache manager -----------------------------------------

COMPILE = r"""
import sys, json
sys.path.insert(0, {here!r})
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton_kernels import KERNELS
out = {{}}
for name in {names!r}:
    fn, sig, cx = KERNELS[name]
    sig = dict(sig, **{{k: "constexpr" for k in cx}})
    for t in (GPUTarget("cuda", 80, 32), GPUTarget("hip", "gfx942", 64)):
        k = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=cx), target=t)
        binary = k.asm["cubin" if t.backend == "cuda" else "hsaco"]
        out[name + "/" + str(t.arch)] = [k.metadata.name, k.metadata.shared, len(binary),
                                         __import__("hashlib").sha256(binary).hexdigest()]
print(json.dumps(out))
"""


def _compile_env(tmp_path, network=None):
    env = dict(os.environ, TRITON_CACHE_MANAGER="kiln.triton:CacheManager",
               KILN_TRITON_CACHE=str(tmp_path / "triton.db"),
               TRITON_CACHE_DIR=str(tmp_path / "triton-dir"), TRITON_DEFAULT_FP_FUSION="1")
    if network:
        env["KILN_NETWORK_FS"] = network
    return env


def _run_compiles(env, names, count):
    script = COMPILE.format(here=str(HERE), names=names)
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(count)]
    results = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=600)
        assert p.returncode == 0, stderr[-3000:]
        results.append(json.loads(stdout.splitlines()[-1]))
    return results


def test_cache_manager_miss_then_hit(tmp_path):
    import sqlite3
    env = _compile_env(tmp_path)
    first = _run_compiles(env, ["add_kernel"], 1)[0]
    db = sqlite3.connect(tmp_path / "triton.db")
    groups = db.execute("SELECT key, name, count(*) FROM groups GROUP BY key, name").fetchall()
    assert len(groups) == 2  # one group per target
    assert all(name == "add_kernel.json" and n >= 6 for _, name, n in groups)
    assert not (tmp_path / "triton-dir").exists()  # nothing went to Triton's file cache
    blobs = db.execute("SELECT count(*) FROM blobs").fetchone()[0]
    db.close()
    # A second process is served from the cache: same binaries, nothing new stored.
    second = _run_compiles(env, ["add_kernel"], 1)[0]
    assert second == first
    db = sqlite3.connect(tmp_path / "triton.db")
    assert db.execute("SELECT count(*) FROM blobs").fetchone()[0] == blobs
    # A damaged member makes its group a miss: Triton compiles again, and
    # the group is published anew, whole. (Its files are removed too, so the
    # next process must read the blobs.)
    import shutil
    shutil.rmtree(str(tmp_path / "triton.db") + ".files")
    db.execute("UPDATE blobs SET data = zeroblob(length(data)) WHERE sha256 IN "
               "(SELECT sha256 FROM groups WHERE member LIKE '%.cubin')")
    db.commit()
    db.close()
    third = _run_compiles(env, ["add_kernel"], 1)[0]
    assert third == first


def test_cache_manager_hands_out_read_only_files(tmp_path, monkeypatch):
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    for k, v in _compile_env(tmp_path).items():
        monkeypatch.setenv(k, v)
    fn, sig, cx = KERNELS["softmax_kernel"]
    sig = dict(sig, **{k: "constexpr" for k in cx})
    triton.compile(ASTSource(fn=fn, signature=sig, constexprs=cx), target=GPUTarget("cuda", 90, 32))
    assert any(st.path == str(tmp_path / "triton.db") for st in kiln.triton._stores.values()), \
        "Triton did not use kiln.triton:CacheManager"
    assert os.stat(tmp_path / "triton.db").st_mode & 0o777 == 0o600
    paths = [p for p in kiln.triton._materialized if p.startswith(str(tmp_path))]
    assert any(p.endswith(".cubin") for p in paths) and any(p.endswith(".json") for p in paths)
    for p in paths:
        st = os.stat(p)
        assert st.st_mode & 0o777 == 0o400 and st.st_uid == os.getuid()
        assert os.path.dirname(p) == str(tmp_path / "triton.db") + ".files"
        assert os.stat(os.path.dirname(p)).st_mode & 0o777 == 0o700
    # A file changed behind the cache's back (made writable, rewritten) is
    # not handed out again: it is replaced by a fresh copy of the blob.
    cubin = next(p for p in paths if p.endswith(".cubin"))
    original = pathlib.Path(cubin).read_bytes()
    os.chmod(cubin, 0o600)
    pathlib.Path(cubin).write_bytes(b"not a cubin")
    kiln.triton._materialized.clear()
    triton.compile(ASTSource(fn=fn, signature=sig, constexprs=cx), target=GPUTarget("cuda", 90, 32))
    assert pathlib.Path(cubin).read_bytes() == original
    assert os.stat(cubin).st_mode & 0o777 == 0o400


@pytest.mark.parametrize("network", [None, "nfs"], ids=["local", "rollback"])
def test_many_processes_compile_the_same_kernels(tmp_path, network):
    """Triton #11512's pattern: processes compiling the same kernels into one
    cache at once. Every process succeeds, and all agree on every binary."""
    for round_ in range(2):
        env = _compile_env(tmp_path / f"round{round_}", network)
        results = _run_compiles(env, ["add_kernel", "softmax_kernel"], 4)
        assert all(r == results[0] for r in results)
        assert len(results[0]) == 4
