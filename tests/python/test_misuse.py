"""The C APIs misused from Python through ctypes, which hands C any integer as
a handle: a cache closed twice or used after its close, an image released
twice or used after its release, a result freed twice, addresses that never
were handles, an empty cache path and a struct size no release has. Each
case runs in a child interpreter, so that one that crashes fails alone.
The binding (kiln.Cache, kiln.Image) keeps its handles to itself; a closed
kiln.Image refuses to be used."""
import pathlib
import subprocess
import sys
import textwrap

import pytest

import kiln

import conftest

PRELUDE = r'''
import ctypes, sys

lib = ctypes.CDLL(sys.argv[1])
lib.kiln_last_error.restype = ctypes.c_char_p
lib.kiln_image_target.restype = ctypes.c_char_p
lib.kiln_image_module.restype = ctypes.c_void_p
for fn in ("kiln_cache_open", "kiln_image_load", "kiln_image_lookup", "kiln_compile_or_load"):
    getattr(lib, fn).restype = ctypes.c_int
cache_path = sys.argv[2].encode()
example = open(sys.argv[3], "rb").read()
INVALID = 2  # KILN_INVALID_ARGUMENT


class Source(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p), ("size", ctypes.c_size_t)]


class Options(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t),
                ("sources", ctypes.POINTER(Source)), ("source_count", ctypes.c_size_t),
                ("entries", ctypes.POINTER(ctypes.c_char_p)), ("entry_count", ctypes.c_size_t),
                ("targets", ctypes.POINTER(ctypes.c_char_p)), ("target_count", ctypes.c_size_t),
                ("opt_level", ctypes.c_int), ("debug", ctypes.c_int),
                ("jobs", ctypes.c_uint), ("link_images", ctypes.c_int),
                ("must_hit", ctypes.c_int), ("library", ctypes.c_char_p),
                ("remote", ctypes.c_char_p), ("remote_read_only", ctypes.c_int),
                ("shard_index", ctypes.c_uint), ("shard_count", ctypes.c_uint)]


buf = ctypes.create_string_buffer(example, len(example))
src = Source(b"deferred.ll", ctypes.cast(buf, ctypes.c_void_p), len(example))


def options():
    o = Options()
    lib.kiln_compile_options_init_size(ctypes.byref(o), ctypes.sizeof(o))
    o.sources, o.source_count = ctypes.pointer(src), 1
    return o


def opened():
    cache = ctypes.c_void_p()
    assert lib.kiln_cache_open(cache_path, ctypes.byref(cache)) == 0, lib.kiln_last_error()
    return cache


def loaded(cache):
    image = ctypes.c_void_p()
    o = options()
    assert lib.kiln_compile_or_load(cache, ctypes.byref(o), b"collatz", b"host",
                                    ctypes.byref(image), None) == 0, lib.kiln_last_error()
    return image


def says(text):
    assert text.encode() in lib.kiln_last_error(), lib.kiln_last_error()


# Never handles: an address nothing is mapped at, and a buffer of garbage.
junk = ctypes.create_string_buffer(b"\xa5" * 4096, 4096)
NEVER = [ctypes.c_void_p(0x1234), ctypes.cast(junk, ctypes.c_void_p)]
'''


def run_case(tmp_path, body):
    """Runs PRELUDE + body in a child interpreter; a crash is a failure."""
    script = tmp_path / "case.py"
    script.write_text(PRELUDE + textwrap.dedent(body) + "\nprint('case passed')\n")
    examples = pathlib.Path(conftest.__file__).parents[2] / "examples"
    proc = subprocess.run(
        [sys.executable, str(script), str(conftest.LIBRARY_DIR / "libkiln-compiler.so"),
         str(tmp_path / "kiln.db"), str(examples / "deferred.ll")],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "case passed" in proc.stdout, (
        f"status {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")


def test_cache_closed_twice(tmp_path):
    run_case(tmp_path, """
        cache = opened()
        lib.kiln_cache_close(cache)
        lib.kiln_cache_close(cache)
        says("kiln_cache_close: cache is not a live kiln_cache handle")
    """)


def test_cache_used_after_close(tmp_path):
    run_case(tmp_path, """
        cache = opened()
        image = loaded(cache)
        lib.kiln_cache_close(cache)
        out = ctypes.c_void_p(1)
        assert lib.kiln_image_load(cache, b"collatz", b"host", ctypes.byref(out)) == INVALID
        says("kiln_image_load: cache is not a live kiln_cache handle")
        assert out.value is None
        o = options()
        assert lib.kiln_compile_or_load(cache, ctypes.byref(o), b"collatz", b"host",
                                        ctypes.byref(out), None) == INVALID
        says("kiln_compile_or_load: cache is not a live kiln_cache handle")
        lib.kiln_image_release(image)  # the image outlived its cache
    """)


def test_image_released_twice_and_used_after(tmp_path):
    run_case(tmp_path, """
        cache = opened()
        image = loaded(cache)
        lib.kiln_image_release(image)
        lib.kiln_image_release(image)
        says("kiln_image_release: image is not a live kiln_image handle")
        fn = ctypes.c_void_p(1)
        assert lib.kiln_image_lookup(image, b"collatz", ctypes.byref(fn)) == INVALID
        says("kiln_image_lookup: image is not a live kiln_image handle")
        assert fn.value is None
        assert lib.kiln_image_module(image) is None
        assert lib.kiln_image_target(image) == b""
        lib.kiln_cache_close(cache)
    """)


def test_never_handles(tmp_path):
    run_case(tmp_path, """
        for p in NEVER:
            out = ctypes.c_void_p(1)
            assert lib.kiln_image_load(p, b"collatz", b"host", ctypes.byref(out)) == INVALID
            says("not a live kiln_cache handle")
            assert lib.kiln_image_lookup(p, b"collatz", ctypes.byref(out)) == INVALID
            says("not a live kiln_image handle")
            assert lib.kiln_image_target(p) == b""
            lib.kiln_image_release(p)
            lib.kiln_cache_close(p)
            says("kiln_cache_close: cache is not a live kiln_cache handle")
            lib.kiln_compile_result_free(p)
    """)


def test_empty_cache_path(tmp_path):
    run_case(tmp_path, """
        cache = ctypes.c_void_p(1)
        assert lib.kiln_cache_open(b"", ctypes.byref(cache)) == INVALID
        says("kiln_cache_open: the path is empty")
        assert cache.value is None
    """)


def test_struct_size_no_release_has(tmp_path):
    run_case(tmp_path, """
        cache = opened()
        image = ctypes.c_void_p()
        for size in (0, ctypes.sizeof(Options) - 4, ctypes.sizeof(Options) + 8, 1 << 40):
            o = options()
            o.struct_size = size
            assert lib.kiln_compile_or_load(cache, ctypes.byref(o), b"collatz", b"host",
                                            ctypes.byref(image), None) == INVALID
            says("kiln_compile_options.struct_size is %d, not a size any release" % size)
        lib.kiln_cache_close(cache)
    """)


def test_binding_image_closed_twice_and_used_after(cache, examples):
    image = cache.compile_or_load((examples / "deferred.ll").read_bytes(), "collatz",
                                  target="host")
    image.close()
    image.close()
    assert image.closed
    with pytest.raises(ValueError, match="closed"):
        image.function("collatz")


def test_binding_empty_path_is_refused(monkeypatch, tmp_path):
    # None is the default cache; "" names no file, in Python as in C.
    monkeypatch.setenv("KILN_CACHE", str(tmp_path / "default.db"))
    with pytest.raises(ValueError, match="the path is empty"):
        kiln.Cache("")
    assert not (tmp_path / "default.db").exists()
    kiln.Cache(None)
    kiln.Cache()
