"""Kernel libraries from Python: the roots of one compile recorded as a
library, loaded as one image in which every root is found by its name."""
import ctypes

import pytest

import kiln

I64 = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)
SAXPY = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double, ctypes.c_double, ctypes.c_double)


def test_a_library_loads_as_one_image_with_every_root(cache, examples):
    result = cache.compile(examples / "deferred.ll", targets=["host"], library="demo")
    assert result.ok
    assert len(result.libraries) == 1
    lib = result.libraries[0]
    assert (lib.name, lib.target, lib.roots) == ("demo", "host", 8)
    assert len(lib.closure) == 32 and lib.image and not lib.error
    # Its closure holds every root's closure: each job of the compile once.
    assert lib.members == len(result.jobs)

    with cache.load_library("demo", target="host") as image:
        assert image.target == "host"
        assert I64(image.function("fib"))(20) == 6765
        assert I64(image.function("collatz"))(27) == 111
        assert SAXPY(image.function("saxpy_like"))(2.0, 3.0, 4.0) == 10.0
        for root in result.roots:
            assert image.function(root.name) != 0

    # Recording it again changes nothing: the same closure, no relink.
    again = cache.compile(examples / "deferred.ll", targets=["host"], library="demo")
    assert again.statuses == ["cached"] * len(result.jobs)
    assert again.libraries[0].closure == lib.closure


def test_an_unknown_library_is_not_found(cache, examples):
    cache.compile(examples / "deferred.ll", entries=["fib"], targets=["host"], library="one")
    with pytest.raises(kiln.NotFoundError) as e:
        cache.load_library("other", target="host")
    assert "other" in str(e.value)
    assert I64(cache.load_library("one").function("fib"))(10) == 55
