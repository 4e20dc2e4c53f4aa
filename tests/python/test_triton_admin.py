"""Triton's cache file (kiln.triton:CacheManager) as kiln-inspect handles
Kiln's: `python -m kiln.triton ls|verify|gc|export|import|config`, and the
pip-installed `kiln-inspect` forwarding to it. No Triton needed: the
entries are written through the cache manager's interface directly."""
import json
import os
import pathlib
import sqlite3
import subprocess
import sys

import pytest

import conftest
import kiln  # noqa: F401
import kiln.triton as kt

SECRET = "ab" * 32


def _run(cache, *args, env=None, check=0):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("KILN_SIGNING", "KILN_REQUIRE"))}
    e["PYTHONPATH"] = os.pathsep.join([str(conftest.PACKAGE_DIR), os.environ.get("PYTHONPATH", "")])
    e.update(env or {})
    p = subprocess.run([sys.executable, "-m", "kiln.triton", "--cache", str(cache), *args], env=e,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == check, p.stdout + p.stderr
    return p


@pytest.fixture
def triton_cache(tmp_path, monkeypatch):
    path = tmp_path / "triton.db"
    monkeypatch.setenv("KILN_TRITON_CACHE", str(path))
    monkeypatch.delenv("KILN_REMOTE", raising=False)
    for key, text in (("KEYONE", "one"), ("KEYTWO", "two")):
        m = kt.CacheManager(key)
        group = {f"k.{ext}": m.put(f"{text} {ext}".encode() * 100, f"k.{ext}")
                 for ext in ("cubin", "ptx", "json")}
        m.put_group("k.json", group)
    kt.CacheManager("KEYSO").put(b"\x7fELF launcher", "launcher.so")
    return path


def test_ls(triton_cache):
    rows = json.loads(_run(triton_cache, "ls", "--json").stdout)
    assert sorted((r["kind"], r["key"], r["name"], len(r["members"])) for r in rows) == [
        ("file", "KEYONE", "k.cubin", 1), ("file", "KEYONE", "k.json", 1), ("file", "KEYONE", "k.ptx", 1),
        ("file", "KEYSO", "launcher.so", 1),
        ("file", "KEYTWO", "k.cubin", 1), ("file", "KEYTWO", "k.json", 1), ("file", "KEYTWO", "k.ptx", 1),
        ("group", "KEYONE", "k.json", 3), ("group", "KEYTWO", "k.json", 3)]
    assert all(r["used"] > 0 for r in rows)
    assert "2 groups, 7 files, 7 blobs" in _run(triton_cache, "ls").stdout


def test_verify_finds_damage(triton_cache):
    assert _run(triton_cache, "verify").stdout.strip().endswith("ok")
    db = sqlite3.connect(triton_cache)
    db.execute("UPDATE blobs SET data = zeroblob(length(data)) WHERE sha256 IN (SELECT sha256 FROM files "
               "WHERE key = 'KEYONE' AND name = 'k.cubin')")
    db.commit()
    db.close()
    out = json.loads(_run(triton_cache, "verify", "--json", check=1).stdout)
    assert not out["ok"] and any("do not match their SHA-256" in p for p in out["problems"])
    # A damaged blob is a miss for Triton, never handed out.
    os.environ["KILN_TRITON_CACHE"] = str(triton_cache)
    kt._materialized.clear()
    for f in pathlib.Path(str(triton_cache) + ".files").iterdir():
        f.unlink()
    with pytest.warns(UserWarning, match="missing or damaged"):
        assert kt.CacheManager("KEYONE").get_group("k.json") is None


def test_export_import_signed(triton_cache, tmp_path):
    bundle = tmp_path / "t.bundle"
    assert "(signed)" in _run(triton_cache, "export", str(bundle), "KEYONE",
                              env={"KILN_SIGNING_KEY": SECRET}).stdout
    other = tmp_path / "other" / "triton.db"
    required = {"KILN_SIGNING_KEY": SECRET, "KILN_REQUIRE_SIGNED": "1"}
    assert "imported 4 entries" in _run(other, "import", str(bundle), env=required).stdout
    rows = json.loads(_run(other, "ls", "--json").stdout)
    assert {r["key"] for r in rows} == {"KEYONE"}
    # Another key, or no key where signatures are required: refused, nothing written.
    third = tmp_path / "third" / "triton.db"
    p = _run(third, "import", str(bundle), env={"KILN_SIGNING_KEY": "cd" * 32}, check=1)
    assert "signature does not match" in p.stderr
    unsigned = tmp_path / "u.bundle"
    _run(triton_cache, "export", str(unsigned))
    _run(third, "config", "require_signed", "1")
    assert "not signed" in _run(third, "import", str(unsigned), check=1).stderr
    assert json.loads(_run(third, "ls", "--json").stdout) == []
    # A damaged bundle is refused whole.
    data = bytearray(bundle.read_bytes())
    data[len(data) // 2] ^= 1
    bundle.write_bytes(bytes(data))
    assert "not imported" in _run(tmp_path / "fourth.db", "import", str(bundle), check=1).stderr
    # Never the cache itself.
    assert "the cache itself" in _run(triton_cache, "export", str(triton_cache), check=2).stderr


def test_gc(triton_cache):
    db = sqlite3.connect(triton_cache)
    db.execute("UPDATE recency SET used = used - 40 * 86400 WHERE key = 'KEYONE'")
    db.commit()
    db.close()
    assert "would evict 4 entries" in _run(triton_cache, "gc", "--older-than", "30d", "--dry-run").stdout
    assert "evicted 4 entries" in _run(triton_cache, "gc", "--older-than", "30d").stdout
    rows = json.loads(_run(triton_cache, "ls", "--json").stdout)
    assert {r["key"] for r in rows} == {"KEYTWO", "KEYSO"}
    files = list(pathlib.Path(str(triton_cache) + ".files").iterdir())
    assert not any(f.read_bytes().startswith(b"one") for f in files)
    _run(triton_cache, "verify")
    assert "evicted 5 entries" in _run(triton_cache, "gc", "--max-size", "0").stdout
    db = sqlite3.connect(triton_cache)
    assert db.execute("SELECT count(*) FROM blobs").fetchone()[0] == 0
    db.close()
    assert not list(pathlib.Path(str(triton_cache) + ".files").iterdir())


def test_kiln_inspect_forwards_triton_caches(triton_cache):
    tool = pathlib.Path(sys.executable).parent / "kiln-inspect"
    if not os.environ.get("KILN_TEST_PIP") or not tool.exists():
        pytest.skip("the kiln-inspect console script is pip install's")
    for args in (["--cache", str(triton_cache), "ls"], ["--cache", str(triton_cache), "triton", "ls"]):
        p = subprocess.run([tool, *args], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0 and "2 groups" in p.stdout, p.stderr
