"""The kiln Python package end to end: compile, load and call through ctypes,
compile-or-load (miss, then hit), errors as exceptions, stats, threads."""
import ctypes
import pathlib
import sqlite3
import threading
import time

import pytest

import conftest
import kiln

I64 = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)
SAXPY = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double, ctypes.c_double, ctypes.c_double)


def test_imports_the_package_under_test():
    assert pathlib.Path(kiln.__file__).resolve().parent == conftest.PACKAGE_DIR / "kiln"


def test_compile_then_load_through_ctypes(cache, examples):
    ir = (examples / "deferred.ll").read_text()
    result = cache.compile(ir, entries=["fib", "saxpy_like"], targets=["host"], opt=2)
    assert result.ok
    # fib (self-recursive) and saxpy_like -> axpy -> scale.
    assert sorted(j.entry for j in result.jobs) == ["axpy", "fib", "saxpy_like", "scale"]
    assert all(len(k) == 32 for k in result.keys)
    assert result.statuses == ["compiled"] * 4
    assert [r.name for r in result.roots] == ["fib", "saxpy_like"]
    assert all(r.image and len(r.closure) == 32 for r in result.roots)
    fib_job = next(j for j in result.jobs if j.entry == "fib")
    assert [key for _, key in fib_job.refs] == [fib_job.key]  # its own job

    again = cache.compile(ir, entries=["fib", "saxpy_like"])
    assert again.statuses == ["cached"] * 4 and again.keys == result.keys

    with cache.load("fib") as image:
        assert image.target == "host"
        assert I64(image.function("fib"))(20) == 6765
        assert image.module != 0
    saxpy = cache.load("saxpy_like", target="host")
    assert SAXPY(saxpy.function("saxpy_like"))(2.0, 3.0, 4.0) == 10.0
    # A deferred child is reachable by its own name in the parent's image.
    assert ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double, ctypes.c_double)(
        saxpy.function("scale"))(3.0, 5.0) == 15.0


def test_every_root_of_a_path(cache, examples):
    result = cache.compile(examples / "deferred.ll")
    assert len(result.roots) == 8 and len(result.jobs) == 8
    image = cache.load("collatz")
    assert I64(image.function("collatz"))(27) == 111


def test_compile_or_load_miss_then_hit(cache, examples):
    ir = (examples / "deferred.ll").read_bytes()
    times = []
    for expected_hit in (False, True):
        start = time.perf_counter()
        # None: the present device, the host unless a GPU is there.
        image = cache.compile_or_load(ir, "fib_calls",
                                      target=None if kiln.present_target() == "host" else "host")
        times.append((time.perf_counter() - start) * 1e3)
        assert image.hit is expected_hit
        assert image.target == "host"
        assert image.report.statuses == (["cached"] * 2 if expected_hit else ["compiled"] * 2)
        assert I64(image.function("fib_calls"))(10) == 177
    print(f"compile-or-load fib_calls from Python: miss {times[0]:.1f} ms, hit {times[1]:.2f} ms")


def test_compile_error_is_an_exception(cache):
    bad = "define i64 @f(i64 %n) {\n  %r = add i64 %n, %nope\n  ret i64 %r\n}\n"
    with pytest.raises(kiln.InvalidArgumentError) as info:
        cache.compile(bad)
    e = info.value
    assert "nope" in str(e) and e.status == "KILN_INVALID_ARGUMENT"
    assert (e.source, e.line, e.column) == ("ir", 2, 20)
    assert (e.entry, e.target, e.job) == ("", "", "")
    assert isinstance(e, kiln.KilnError) and isinstance(e, ValueError)
    with pytest.raises(kiln.InvalidArgumentError) as info:
        cache.compile_or_load(["define i64 @g() {\n  ret i64 1\n}\n", bad], "g")
    assert (info.value.source, info.value.line) == ("ir[1]", 2)
    # Nothing was written.
    with pytest.raises(kiln.NotFoundError):
        cache.load("f")


def test_errors_name_the_entry_and_target(cache, examples):
    ir = examples / "deferred.ll"
    with pytest.raises(kiln.InvalidArgumentError) as info:
        cache.compile(ir, entries=["no_such_function"])
    assert info.value.entry == "no_such_function"
    with pytest.raises(kiln.InvalidArgumentError) as info:
        cache.compile(ir, targets=["sm_1"])
    assert info.value.target == "sm_1" and "sm_1" in str(info.value)
    bad_deferred = ("declare ptr @kiln_deferred(ptr)\n@g = global i64 0\n"
                    "define ptr @parent() {\n  %p = call ptr @kiln_deferred(ptr @g)\n"
                    "  ret ptr %p\n}\n")
    with pytest.raises(kiln.InvalidArgumentError) as info:
        cache.compile(bad_deferred)
    assert (info.value.entry, info.value.target) == ("parent", "host")
    with pytest.raises(kiln.InvalidArgumentError, match="0..3"):
        cache.compile(ir, opt=9)
    with pytest.raises(kiln.InvalidArgumentError, match="cannot read"):
        cache.compile(pathlib.Path("/nonexistent/unit.ll"))
    with pytest.raises(TypeError):
        cache.compile(42)


def test_load_errors(cache, examples):
    with pytest.raises(kiln.NotFoundError):
        cache.load("never_compiled")
    cache.compile(examples / "deferred.ll", entries=["fib"])
    image = cache.load("fib")
    with pytest.raises(kiln.NotFoundError, match="no function 'nope'"):
        image.function("nope")
    image.close()
    assert image.closed
    with pytest.raises(ValueError, match="closed"):
        image.function("fib")


def test_a_closure_key_loads_its_own_closure_never_a_name_spelling_it(cache, tmp_path, examples):
    key = cache.compile(examples / "deferred.ll", entries=["fib"]).roots[0].closure
    impostor = "define i64 @impostor(i64 %n) {\n  ret i64 666\n}\n"
    # A function named like fib's closure key cannot become a root.
    with pytest.raises(kiln.InvalidArgumentError, match="cannot be a root") as info:
        cache.compile(impostor.replace("@impostor", f'@"{key}"'))
    assert info.value.entry == key
    # Name rows of that key pointing at other code (an older or crafted cache)
    # are never consulted: the key loads the closure it spells.
    other = cache.compile(impostor).roots[0].closure
    with sqlite3.connect(tmp_path / "kiln.db") as db:
        for name in (key, key.upper()):
            db.execute("INSERT INTO names(name, target, closure_key, updated_at) "
                       "VALUES (?, 'host', ?, 0)", (name, bytes.fromhex(other)))
    db.close()
    for lookup in (key, key.upper()):
        image = cache.load(lookup, target="host")
        assert I64(image.function("fib"))(20) == 6765
        with pytest.raises(kiln.NotFoundError):
            image.function("impostor")


def test_stats(cache, examples):
    cache.compile(examples / "deferred.ll", entries=["fib"])
    cache.compile(examples / "deferred.ll", entries=["fib"])
    cache.load("fib")
    s = cache.stats()
    assert s["jobs"] == 1 and s["closures"] == 1 and s["images"] == 1 and s["names"] == 1
    assert s["job_misses"] == 1 and s["job_hits"] == 1
    assert s["loads"] == 1 and s["image_hits"] == 1
    assert s["jobs_per_target"] == {"host": 1}
    assert 0 < s["stored_bytes"] <= s["file_bytes"]


def test_threads_share_one_cache(cache, examples):
    ir = (examples / "deferred.ll").read_text()
    want = {"fib": (20, 6765), "collatz": (27, 111), "fib_calls": (10, 177)}
    errors = []

    def work(i):
        try:
            for round_ in range(3):
                name = list(want)[(i + round_) % 3]
                arg, expected = want[name]
                image = cache.compile_or_load(ir, name, target="host", jobs=1)
                got = I64(image.function(name))(arg)
                if got != expected:
                    errors.append(f"{name}({arg}) = {got}")
        except Exception as e:  # reported below, with the thread's message
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@pytest.mark.skipif(kiln.present_target() != "host", reason="a GPU is present: loading works")
def test_gpu_code_without_a_gpu_is_unavailable_but_stored(cache, examples):
    ir = examples / "kernels.ll"
    with pytest.raises(kiln.UnavailableError) as info:
        cache.compile_or_load(ir, "apply", target="sm_90")
    assert (info.value.entry, info.value.target) == ("apply", "sm_90")
    # The compile was stored all the same: a GPU machine sharing the cache loads it.
    assert set(cache.compile(ir, entries=["apply"], targets=["sm_90"]).statuses) == {"cached"}
