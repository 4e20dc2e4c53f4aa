"""Kiln's Redis tier as Triton's remote cache, against a private
redis-server: values checked (checksums, the ident they are filed under,
signatures), a group published as one value (never torn, never mixed),
kiln.triton:CacheManager over it and Triton's own RemoteCacheManager with
kiln.triton:RemoteCacheBackend, and a server that is down or goes down
(a miss, one warning, local compiles). The value tests need no Triton."""
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time

import pytest

import conftest  # noqa: F401  (puts the package on sys.path)
import kiln  # noqa: E402
import kiln.triton as kt  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
SECRET = "ab" * 32


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _redis_cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port), *args], check=True, capture_output=True).stdout


@pytest.fixture
def redis_server(tmp_path):
    """A private redis-server on a free port: (port, stop)."""
    server = shutil.which("redis-server")
    if not server:
        pytest.skip("redis-server is not installed (Debian: redis-server)")
    port = _free_port()
    proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail("redis-server did not start")
            time.sleep(0.05)

    def stop():
        if proc.poll() is None:
            proc.terminate()
            proc.wait(10)

    yield port, stop
    stop()


# --- values ------------------------------------------------------------------

MEMBERS = {"k.json": b'{"name": "k"}', "k.cubin": b"\x7fELF" + bytes(range(256)), "k.ptx": b""}


def test_value_round_trip_and_checks():
    value = kt.encode_value("triton-group:KEY:k.json", MEMBERS)
    assert kt.decode_value(value, "triton-group:KEY:k.json") == MEMBERS
    with pytest.raises(kt._Rejected, match="another key"):
        kt.decode_value(value, "triton-group:OTHER:k.json")
    for at in (5, 20, len(value) // 2, len(value) - 1):  # any flipped byte is caught
        damaged = bytearray(value)
        damaged[at] ^= 1
        with pytest.raises(kt._Rejected):
            kt.decode_value(bytes(damaged), "triton-group:KEY:k.json")
    with pytest.raises(kt._Rejected):
        kt.decode_value(value[:-7], "triton-group:KEY:k.json")  # torn


def test_value_signatures(monkeypatch):
    monkeypatch.setenv("KILN_SIGNING_KEY", SECRET)
    secret = kt._signing_key()
    assert secret == bytes.fromhex(SECRET)
    signed = kt.encode_value("i", MEMBERS, secret)
    unsigned = kt.encode_value("i", MEMBERS)
    assert kt.decode_value(signed, "i", secret, required=True) == MEMBERS
    assert kt.decode_value(unsigned, "i", secret, required=False) == MEMBERS
    with pytest.raises(kt._Rejected, match="not signed"):
        kt.decode_value(unsigned, "i", secret, required=True)
    with pytest.raises(kt._Rejected, match="signature does not match"):
        kt.decode_value(signed, "i", bytes(32), required=False)
    with pytest.raises(kt._Rejected, match="no KILN_SIGNING_KEY"):
        kt.decode_value(signed, "i", None, required=True)
    # Re-signed by whoever lacks the key: the checksum may be right, the MAC is not.
    forged = bytearray(signed)
    forged[-40] ^= 1
    with pytest.raises(kt._Rejected):
        kt.decode_value(bytes(forged), "i", secret)
    monkeypatch.setenv("KILN_SIGNING_KEY", "short")
    with pytest.raises(kiln.InvalidArgumentError, match="neither hex nor base64|at least 32"):
        kt._signing_key()


def test_remote_urls():
    c = kt._remote_config("redis://u:p%40ss@example:7000/3?prefix=ci&ttl=60&timeout_ms=250&read_only=1")
    assert (c["host"], c["port"], c["db"], c["user"], c["password"]) == ("example", 7000, 3, "u", "p@ss")
    assert (c["prefix"], c["ttl"], c["timeout"], c["read_only"]) == ("ci", 60, 0.25, True)
    assert c["where"] == "redis://example:7000/3"
    assert kt._remote_config("off") is None and kt._remote_config("") is None
    for bad in ("rediss://h", "http://h", "redis://h:0", "redis://h?colour=red"):
        with pytest.raises(kiln.InvalidArgumentError) as e:
            kt._remote_config(bad)
        assert "p%40ss" not in str(e.value)


def test_a_group_is_one_value_never_mixed(redis_server, monkeypatch):
    port, _ = redis_server
    monkeypatch.setenv("KILN_REMOTE", f"redis://127.0.0.1:{port}/0")
    tier = kt._Tier(kt._remote_config())
    ours = {"k.json": b"A-json", "k.cubin": b"A-cubin"}
    theirs = {"k.json": b"B-json", "k.cubin": b"B-cubin"}
    tier.publish("triton-group", "KEY", "k.json", ours)
    tier.publish("triton-group", "KEY", "k.json", theirs)
    assert tier.fetch("triton-group", "KEY", "k.json", False) == theirs
    keys = _redis_cli(port, "--raw", "keys", "*").split()
    assert keys == [b"kiln:v1:triton-group:KEY:k.json"]
    # A value damaged in the server is a miss, counted and said.
    _redis_cli(port, "setrange", "kiln:v1:triton-group:KEY:k.json", "30", "X")
    with pytest.warns(RuntimeWarning, match="rejected"):
        assert tier.fetch("triton-group", "KEY", "k.json", False) is None
    assert tier.stats["rejected"] == 1 and tier.stats["errors"] == 0


# --- through Triton -------------------------------------------------------------

COMPILE = r"""
import sys, json, hashlib
sys.path.insert(0, {here!r})
import triton, kiln.triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton_kernels import KERNELS
out = {{}}
for i, name in enumerate({names!r}):
    if i == 1 and {stop_after_first!r}:
        import os, signal; os.kill({stop_after_first!r}, signal.SIGTERM); import time; time.sleep(0.5)
    fn, sig, cx = KERNELS[name]
    sig = dict(sig, **{{k: "constexpr" for k in cx}})
    k = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=cx), target=GPUTarget("cuda", 80, 32))
    out[name] = hashlib.sha256(k.asm["cubin"]).hexdigest()
print(json.dumps([out, kiln.triton.remote_stats()]))
"""


def _compile(env, names=("add_kernel",), stop_after_first=0):
    triton = pytest.importorskip("triton", reason="Triton is not installed (pip install '.[triton]')")
    del triton
    script = COMPILE.format(here=str(HERE), names=list(names), stop_after_first=stop_after_first)
    p = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    binaries, stats = json.loads(p.stdout.splitlines()[-1])
    return binaries, stats, p.stderr


def _env(tmp_path, name, port, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KILN_SIGNING", "KILN_REQUIRE"))}
    env.update(TRITON_CACHE_MANAGER="kiln.triton:CacheManager",
               KILN_TRITON_CACHE=str(tmp_path / name / "triton.db"),
               TRITON_CACHE_DIR=str(tmp_path / name / "triton-dir"),
               KILN_REMOTE=f"redis://127.0.0.1:{port}/0", PYTHONWARNINGS="default",
               PYTHONPATH=os.pathsep.join([str(conftest.PACKAGE_DIR), os.environ.get("PYTHONPATH", "")]))
    env.update(extra)
    return env


def test_cache_manager_over_the_tier(redis_server, tmp_path):
    port, _ = redis_server
    first, stats, _ = _compile(_env(tmp_path, "a", port))
    assert stats["published"] >= 1 and stats["hits"] == 0
    # Another machine (an empty local cache) is served from Redis, whole.
    second, stats, _ = _compile(_env(tmp_path, "b", port))
    assert second == first and stats["hits"] == 1 and stats["published"] == 0
    import sqlite3
    db = sqlite3.connect(tmp_path / "b" / "triton.db")
    assert db.execute("SELECT count(*) FROM groups").fetchone()[0] >= 6  # now local too
    db.close()
    # Read-only consumers publish nothing.
    _, stats, _ = _compile(_env(tmp_path, "c", port, KILN_REMOTE_READ_ONLY="1"), ["softmax_kernel"])
    assert stats["published"] == 0 and stats["misses"] == 1


def test_tritons_remote_cache_manager_with_kilns_backend(redis_server, tmp_path):
    port, _ = redis_server
    env = _env(tmp_path, "a", port, TRITON_CACHE_MANAGER="triton.runtime.cache:RemoteCacheManager",
               TRITON_REMOTE_CACHE_BACKEND="kiln.triton:RemoteCacheBackend")
    first, stats, _ = _compile(env)
    assert stats["published"] >= 1
    env["TRITON_CACHE_DIR"] = str(tmp_path / "b" / "triton-dir")
    second, stats, _ = _compile(env)
    assert second == first and stats["hits"] >= 1 and stats["published"] == 0
    # Both managers share values: Kiln's manager reads what Triton's published.
    third, stats, _ = _compile(_env(tmp_path, "c", port))
    assert third == first and stats["hits"] == 1


def test_signed_values(redis_server, tmp_path):
    port, _ = redis_server
    unsigned, _, _ = _compile(_env(tmp_path, "a", port))
    # Signatures required: the unsigned group is refused and compiled locally.
    required = dict(KILN_SIGNING_KEY=SECRET, KILN_REQUIRE_SIGNED="1")
    again, stats, stderr = _compile(_env(tmp_path, "b", port, **required))
    assert again == unsigned and stats["rejected"] == 1 and stats["hits"] == 0
    assert "not signed" in stderr
    # ... and published signed: the next reader that requires them is served.
    again, stats, _ = _compile(_env(tmp_path, "c", port, **required))
    assert again == unsigned and stats["hits"] == 1
    # Another key: refused.
    _, stats, stderr = _compile(_env(tmp_path, "d", port, KILN_SIGNING_KEY="cd" * 32))
    assert stats["rejected"] == 1 and "signature does not match" in stderr


def test_redis_down_falls_back_to_local_with_one_warning(redis_server, tmp_path):
    port, stop = redis_server
    # Down from the start: every kernel compiled locally, one warning.
    env = _env(tmp_path, "a", _free_port())
    binaries, stats, stderr = _compile(env, ["add_kernel", "softmax_kernel"])
    assert len(binaries) == 2 and stats["errors"] == 1 and stats["hits"] == 0
    assert stderr.count("is unavailable") == 1, stderr
    import sqlite3
    db = sqlite3.connect(tmp_path / "a" / "triton.db")
    assert db.execute("SELECT count(DISTINCT key) FROM groups").fetchone()[0] == 2
    db.close()
    # Going down mid-process: the first kernel is published, the server is
    # stopped, the second compiles locally, one warning.
    server_pid = int(_redis_cli(port, "info", "server").split(b"process_id:")[1].split()[0])
    binaries, stats, stderr = _compile(_env(tmp_path, "b", port), ["add_kernel", "layer_norm_kernel"],
                                       stop_after_first=server_pid)
    assert len(binaries) == 2 and stats["published"] >= 1 and stats["errors"] == 1
    assert stderr.count("is unavailable") == 1, stderr
