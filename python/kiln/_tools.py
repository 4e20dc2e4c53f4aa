"""The console scripts `kiln-precompile` and `kiln-inspect` of a pip
install: each replaces the Python process with the tool installed in the
package's bin/ (kiln/bin, beside kiln/lib), so exit statuses, signals and
standard streams are the tool's own. `kiln-inspect` hands Triton's cache
file (kiln.triton:CacheManager's) to `python -m kiln.triton`: when the
command is `triton ...`, or when --cache names such a file."""
import os
import pathlib
import sys


def _exec(name):
    tool = pathlib.Path(__file__).resolve().parent / "bin" / name
    if not tool.is_file():
        sys.stderr.write(f"{name}: not installed in {tool.parent} (install the kiln package "
                         f"with `pip install .`; a CMake build has it in <build>/bin)\n")
        sys.exit(127)
    os.execv(tool, [name, *sys.argv[1:]])


def precompile():
    _exec("kiln-precompile")


def _is_triton_cache(path):
    """Whether ``path`` is a Triton cache file (its SQLite schema has the
    ``groups`` table of kiln.triton and no Kiln jobs)."""
    import sqlite3
    try:
        with open(path, "rb") as f:
            if f.read(16) != b"SQLite format 3\0":
                return False
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            db.close()
    except (OSError, sqlite3.Error):
        return False
    return {"groups", "blobs", "files"} <= tables and "jobs" not in tables


def inspect():
    args = sys.argv[1:]
    cache, rest = None, args
    if len(args) >= 2 and args[0] == "--cache":
        cache, rest = args[1], args[2:]
    elif args and args[0].startswith("--cache="):
        cache, rest = args[0].split("=", 1)[1], args[1:]
    if rest[:1] == ["triton"] or (cache and rest and _is_triton_cache(cache)):
        from .triton import main
        sys.exit(main((["--cache", cache] if cache else []) + rest[rest[:1] == ["triton"]:]))
    _exec("kiln-inspect")
