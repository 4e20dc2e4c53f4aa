"""Single-flight in Kiln's Triton cache manager: processes that miss the same
kernel at once compile it once, the others waiting for it and served its
group; a holder that is killed is taken over at once, one that stops beating
(SIGSTOP) within about a lease term, one that beats is waited for. Triton
compiles for targets with no GPU here (sm_80, as Triton's own cache tests
do). Skipped where Triton is not installed."""
import json
import os
import pathlib
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install '.[triton]')")

import kiln.triton  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent

# One compile of KERNEL for sm_80 through kiln.triton:CacheManager. Triton's
# compilation listener says whether Triton compiled (a miss) or was served
# (a hit). With GO set, the process first does Triton's once-per-process
# work, says it is ready and waits for GO to exist, so that several start
# their compile within a millisecond or two. With STALL set, the process
# stops inside its compile (the first file Triton puts, after its miss
# claimed the group), having said so in STALL.
CHILD = r"""
import hashlib, json, os, sys, time
sys.path.insert(0, {here!r})
import triton
import triton.knobs
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.cache import triton_key
import kiln.triton
from triton_kernels import KERNELS

compiled = []
triton.knobs.compilation.listener = lambda **kw: compiled.append(not kw["cache_hit"])
stall = os.environ.get("STALL")
if stall:
    put = kiln.triton.CacheManager.put
    def stalled_put(self, *args, **kw):
        pathlib_path = stall + ".tmp"
        with open(pathlib_path, "w") as f:
            f.write(str(os.getpid()))
        os.replace(pathlib_path, stall)
        time.sleep(3600)
    kiln.triton.CacheManager.put = stalled_put
served_at = []
get_group = kiln.triton.CacheManager.get_group
def timed_get_group(self, filename):
    group = get_group(self, filename)
    served_at.append(time.time())
    return group
kiln.triton.CacheManager.get_group = timed_get_group

fn, sig, cx = KERNELS[os.environ["KERNEL"]]
src = ASTSource(fn=fn, signature=dict(sig, **{{k: "constexpr" for k in cx}}), constexprs=cx)
triton_key()
go = os.environ.get("GO")
if go:
    open(go + "." + str(os.getpid()), "w").close()
    while not os.path.exists(go):
        time.sleep(0.001)
asking = os.environ.get("ASKING")
if asking:
    open(asking, "w").close()
k = triton.compile(src, target=GPUTarget("cuda", 80, 32))
print(json.dumps(dict(compiled=compiled, stats=kiln.triton.flight_stats(), served_at=served_at[0],
                      cubin=hashlib.sha256(k.asm["cubin"]).hexdigest())))
"""


def _env(tmp_path, kernel, network=None, **extra):
    env = dict(os.environ, TRITON_CACHE_MANAGER="kiln.triton:CacheManager",
               KILN_TRITON_CACHE=str(tmp_path / "triton.db"),
               TRITON_CACHE_DIR=str(tmp_path / "triton-dir"), TRITON_DEFAULT_FP_FUSION="1",
               KERNEL=kernel)
    env.pop("TRITON_ALWAYS_COMPILE", None)
    env.pop("KILN_SINGLE_FLIGHT", None)
    if network:
        env["KILN_NETWORK_FS"] = network
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _start(env):
    return subprocess.Popen([sys.executable, "-c", CHILD.format(here=str(HERE))], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(proc, timeout=300):
    stdout, stderr = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, stderr[-3000:]
    return json.loads(stdout.splitlines()[-1])


def _wait_for(path, proc, timeout=120):
    end = time.monotonic() + timeout
    while not os.path.exists(path):
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.01)


def _claims(tmp_path):
    db = sqlite3.connect(tmp_path / "triton.db")
    try:
        return db.execute("SELECT claim_key, pid FROM claims").fetchall()
    except sqlite3.OperationalError:
        return []  # no claim was ever taken: no table
    finally:
        db.close()


@pytest.mark.parametrize("network", [None, "nfs"], ids=["local", "rollback"])
def test_processes_missing_the_same_kernel_compile_it_once(tmp_path, network):
    count = 4
    go = tmp_path / "go"
    procs = [_start(_env(tmp_path, "matmul_kernel", network, GO=go)) for _ in range(count)]
    end = time.monotonic() + 300
    while len(list(tmp_path.glob("go.*"))) < count:
        assert all(p.poll() is None for p in procs), [p.communicate()[1][-2000:] for p in procs]
        assert time.monotonic() < end
        time.sleep(0.01)
    go.touch()
    results = [_result(p) for p in procs]
    compiled = [r["compiled"] == [True] for r in results]
    assert sum(compiled) == 1, results
    assert len({r["cubin"] for r in results}) == 1
    holder = results[compiled.index(True)]["stats"]
    assert holder["claimed"] == 1 and holder["waited"] == 0
    for r, c in zip(results, compiled):
        if not c:
            assert r["stats"]["waited"] == 1 and r["stats"]["theirs"] == 1, r
            assert r["stats"]["claimed"] == 0 and r["stats"]["unclaimed"] == 0, r
    assert _claims(tmp_path) == []  # released with the publish
    # A fresh process is served without a claim.
    again = _result(_start(_env(tmp_path, "matmul_kernel", network)))
    assert again["compiled"] == [False] and again["stats"]["claimed"] == 0


@pytest.mark.parametrize("reap", [True, False], ids=["dead", "zombie"])
def test_a_killed_holder_is_taken_over_at_once(tmp_path, reap):
    # A lease of a minute: only seeing that the holder's process is gone can
    # let the waiter take over within seconds.
    stall = tmp_path / "stalled"
    holder = _start(_env(tmp_path, "add_kernel", STALL=stall, KILN_CLAIM_LEASE_MS=60000))
    try:
        _wait_for(stall, holder)
        assert [pid for _, pid in _claims(tmp_path)] == [holder.pid]
        asking = tmp_path / "asking"
        waiter = _start(_env(tmp_path, "add_kernel", ASKING=asking, KILN_CLAIM_LEASE_MS=60000))
        _wait_for(asking, waiter)
        time.sleep(1.5)
        assert waiter.poll() is None  # waiting for the live holder
        holder.kill()
        killed_at = time.time()
        if reap:
            holder.wait()
        r = _result(waiter)
        assert r["served_at"] - killed_at < 5
        assert r["compiled"] == [True]
        assert r["stats"]["waited"] == 1 and r["stats"]["took_over"] == 1 and r["stats"]["claimed"] == 1
    finally:
        holder.kill()
        holder.wait()
    assert _claims(tmp_path) == []


def test_a_stopped_holder_is_taken_over_after_a_lease_term(tmp_path):
    term = 1.0
    stall = tmp_path / "stalled"
    holder = _start(_env(tmp_path, "add_kernel", STALL=stall, KILN_CLAIM_LEASE_MS=int(term * 1000)))
    try:
        _wait_for(stall, holder)
        asking = tmp_path / "asking"
        waiter = _start(_env(tmp_path, "add_kernel", ASKING=asking, KILN_CLAIM_LEASE_MS=int(term * 1000)))
        _wait_for(asking, waiter)
        # The holder beats: it is waited for over several terms.
        time.sleep(3 * term)
        assert waiter.poll() is None
        os.kill(holder.pid, signal.SIGSTOP)
        stopped_at = time.time()
        r = _result(waiter)
        # Its last beat was at most a quarter term before it stopped; the
        # waiter takes over once it has seen no beat for a whole term.
        assert 0.5 * term <= r["served_at"] - stopped_at < 2.5 * term, r
        assert r["compiled"] == [True]
        assert r["stats"]["took_over"] == 1
    finally:
        holder.kill()
        holder.wait()


def test_single_flight_off_compiles_without_waiting(tmp_path):
    stall = tmp_path / "stalled"
    holder = _start(_env(tmp_path, "add_kernel", STALL=stall, KILN_CLAIM_LEASE_MS=60000))
    try:
        _wait_for(stall, holder)
        r = _result(_start(_env(tmp_path, "add_kernel", KILN_SINGLE_FLIGHT=0)), timeout=60)
        assert r["compiled"] == [True]
        assert r["stats"]["waited"] == 0 and r["stats"]["unclaimed"] == 1
    finally:
        holder.kill()
        holder.wait()


def test_a_holder_that_beats_is_outwaited_at_the_wait_limit(tmp_path):
    stall = tmp_path / "stalled"
    holder = _start(_env(tmp_path, "add_kernel", STALL=stall, KILN_CLAIM_LEASE_MS=400))
    try:
        _wait_for(stall, holder)
        r = _result(_start(_env(tmp_path, "add_kernel", KILN_CLAIM_LEASE_MS=400, KILN_CLAIM_WAIT_S=2)),
                    timeout=60)
        assert r["compiled"] == [True]
        assert r["stats"]["waited"] == 1 and r["stats"]["unclaimed"] == 1
        assert r["stats"]["took_over"] == 0 and r["stats"]["waited_s"] >= 2
    finally:
        holder.kill()
        holder.wait()


def test_a_failed_compile_lets_go_of_its_claim(tmp_path, monkeypatch):
    """Triton drops its cache manager with a compile that raised: the claim
    goes with it, so that the others do not wait for a compile that ended."""
    import gc
    monkeypatch.setenv("KILN_TRITON_CACHE", str(tmp_path / "triton.db"))
    manager = kiln.triton.CacheManager("A" * 52)
    assert manager.get_group("k.json") is None
    assert manager.get_group("k.json") is None  # asked twice, held once
    assert [pid for _, pid in _claims(tmp_path)] == [os.getpid()]
    # This process asks again (a retry): it holds the claim, so it compiles;
    # that compile ending too leaves the first one's claim.
    assert kiln.triton.CacheManager("A" * 52).get_group("k.json") is None
    gc.collect()
    assert [pid for _, pid in _claims(tmp_path)] == [os.getpid()]
    del manager
    gc.collect()
    assert _claims(tmp_path) == []


def test_an_error_with_claims_compiles_without_waiting(tmp_path, monkeypatch):
    monkeypatch.setenv("KILN_TRITON_CACHE", str(tmp_path / "triton.db"))
    kiln.triton.CacheManager("B" * 52)  # makes the cache file
    db = sqlite3.connect(tmp_path / "triton.db")
    db.execute("CREATE TABLE claims (claim_key TEXT PRIMARY KEY)")  # not the table claims need
    db.commit()
    db.close()
    before = kiln.triton.flight_stats()
    start = time.monotonic()
    assert kiln.triton.CacheManager("B" * 52).get_group("k.json") is None
    assert time.monotonic() - start < 5
    after = kiln.triton.flight_stats()
    assert after["unclaimed"] == before["unclaimed"] + 1 and after["claimed"] == before["claimed"]
