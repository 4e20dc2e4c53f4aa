"""Crash isolation from Python: an IR that makes LLVM's NVPTX backend end
its process (report_fatal_error, "Cannot select") raises an exception naming
the job, and the same interpreter compiles on; a request with one such root
and one good root stores the good one; the code generation workers end with
the interpreter that started them."""
import ctypes
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import conftest
import kiln

I64 = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)

# sm_80 has no thread-block clusters: instruction selection for this read
# ends an LLVM process ("LLVM ERROR: Cannot select: intrinsic ..."; llc
# -mcpu=sm_80 aborts the same way).
CLUSTER_ID = """
declare i32 @llvm.nvvm.read.ptx.sreg.clusterid.x()

define ptx_kernel void @cluster_id(ptr %out) {
  %v = call i32 @llvm.nvvm.read.ptx.sreg.clusterid.x()
  store i32 %v, ptr %out
  ret void
}
"""

STORE_SEVEN = """
define ptx_kernel void @store_seven(ptr %out) {
  store i32 7, ptr %out
  ret void
}
"""

LLVM_SAID = "LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.read.ptx.sreg.clusterid.x"


def test_a_backend_abort_is_an_exception_and_the_interpreter_compiles_on(cache, examples):
    with pytest.raises(kiln.CompileError) as info:
        cache.compile(CLUSTER_ID, targets=["sm_80"])
    e = info.value
    assert (e.entry, e.target) == ("cluster_id", "sm_80")
    assert e.status == "KILN_INTERNAL" and isinstance(e, kiln.KilnError)
    assert LLVM_SAID in str(e) and "SIGABRT" in str(e)
    assert [(j.entry, j.status) for j in e.result.jobs] == [("cluster_id", "failed")]
    assert LLVM_SAID in e.result.jobs[0].error
    # Again, in the same interpreter: the same error, not a stale worker.
    with pytest.raises(kiln.CompileError, match="Cannot select"):
        cache.compile(CLUSTER_ID, targets=["sm_80"])
    # Host code compiles, loads and runs.
    result = cache.compile(examples / "deferred.ll", entries=["fib"], targets=["host"])
    assert result.statuses == ["compiled"]
    assert I64(cache.load("fib").function("fib"))(20) == 6765
    good = cache.compile(STORE_SEVEN, targets=["sm_80"])
    assert good.statuses == ["compiled"]


def test_one_bad_root_and_one_good_root_stores_the_good_one(cache):
    ir = CLUSTER_ID + STORE_SEVEN
    with pytest.raises(kiln.CompileError) as info:
        cache.compile(ir, targets=["sm_80"], jobs=2)
    result = info.value.result
    assert {j.entry: j.status for j in result.jobs} == {"cluster_id": "failed",
                                                         "store_seven": "compiled"}
    assert info.value.entry == "cluster_id"
    roots = {r.name: r for r in result.roots}
    assert set(roots) == {"cluster_id", "store_seven"}
    assert roots["store_seven"].error == "" and roots["store_seven"].image
    assert roots["cluster_id"].error
    again = cache.compile(ir, entries=["store_seven"], targets=["sm_80"])
    assert again.statuses == ["cached"]
    assert cache.stats()["jobs"] == 1


def _state(pid):
    """The process state letter of `pid` ("Z" for a zombie), or None if gone."""
    try:
        text = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text[text.rindex(")") + 2]


def _children(pid):
    pids = []
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            pids += [int(p) for p in (task / "children").read_text().split()]
        except FileNotFoundError:
            pass
    return pids


def test_workers_end_when_the_interpreter_is_killed(tmp_path, examples):
    script = textwrap.dedent(f"""
        import pathlib, sys, time
        sys.path.insert(0, {str(conftest.PACKAGE_DIR)!r})
        import kiln
        kiln.Cache({str(tmp_path / "kiln.db")!r}).compile(
            pathlib.Path({str(examples / "deferred.ll")!r}), entries=["fib"], targets=["host"])
        print("compiled", flush=True)
        time.sleep(600)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "compiled"
        workers = [p for p in _children(child.pid)
                   if "kiln-codegen-worker" in pathlib.Path(f"/proc/{p}/cmdline").read_text()]
        assert workers, "the compile ran in no worker process"
        assert all(_state(p) not in (None, "Z") for p in workers)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_state(p) not in (None, "Z") for p in workers):
        time.sleep(0.02)
    assert [p for p in workers if _state(p) not in (None, "Z")] == []
