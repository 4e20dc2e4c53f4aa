"""Triton kernels through Kiln.

Ahead of time (no GPU needed)::

    import kiln, kiln.triton
    cache = kiln.Cache("kernels.db")
    kiln.triton.precompile(add_kernel, {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"},
                           {"BLOCK": 1024}, ["sm_80", "sm_90", "gfx942"], cache)

runs Triton's front end for each target down to its LLVM IR (``asm["llir"]``),
stores that IR as a Kiln job (keyed like every job: IR, target, options and
toolchain; the IR carries the producing Triton's version and backend options
as the kernel's ``kiln-producer`` attribute), links it to an image whose root
is Triton's kernel name, and records Triton's launch metadata beside it.

At run time (a GPU, no Triton needed)::

    kernel = kiln.triton.load("add_kernel", cache)   # the present GPU's target
    kernel.function, kernel.module, kernel.metadata  # CUfunction / hipFunction_t, ...

As Triton's own cache: ``TRITON_CACHE_MANAGER=kiln.triton:CacheManager``
(see ``CacheManager``).
"""
import base64
import hashlib
import hmac
import json
import os
import re
import socket
import sqlite3
import struct
import sys
import tempfile
import threading
import time
import urllib.parse
import weakref

from ._errors import CorruptError, InternalError, InvalidArgumentError, UnavailableError

#: The Triton release whose LLVM IR Kiln's LLVM 22 parses (README, "Triton").
TRITON_VERSION = "3.7.1"

_META_PREFIX = "kiln_triton__"


def _triton():
    try:
        import triton
    except ImportError as e:
        raise UnavailableError(f"Triton is not installed ({e}); pip install 'kiln[triton]' "
                               f"(triton=={TRITON_VERSION})") from None
    return triton


def gpu_target(spec):
    """Triton's GPUTarget for a Kiln target spec: ``sm_80``, ``sm_90a`` (CUDA)
    or ``gfx942``, ``gfx942:xnack-`` (HIP; wave64 on gfx9, else wave32)."""
    from triton.backends.compiler import GPUTarget
    m = re.fullmatch(r"sm_(\d+)a?", spec)
    if m:
        return GPUTarget("cuda", int(m.group(1)), 32)
    m = re.fullmatch(r"(gfx[0-9a-f]+)(:.*)?", spec)
    if m:
        return GPUTarget("hip", m.group(1), 64 if m.group(1).startswith("gfx9") else 32)
    raise InvalidArgumentError(f"'{spec}' is not a Triton GPU target (sm_XY, sm_XYa or gfxNNN)",
                               target=spec)


def kiln_target(spec):
    """The Kiln target that Triton's code for ``spec`` needs: Triton compiles
    sm_90 and newer for their architecture-specific variant (sm_90a: wgmma,
    setmaxnreg), so ``sm_90`` is compiled, recorded and loaded as ``sm_90a``."""
    m = re.fullmatch(r"sm_(\d+)a?", spec)
    if m and int(m.group(1)) >= 90:
        return f"sm_{m.group(1)}a"
    return spec


def metadata_entry(name, target):
    """The host root that holds the launch metadata of kernel ``name`` for
    ``target``: a function returning it as a NUL-terminated JSON string."""
    return _META_PREFIX + name + "__" + re.sub(r"[^A-Za-z0-9_]", "_", target)


def _front_end(fn, signature, constexprs, target, options):
    """Runs Triton's stages for ``target`` up to and including LLVM IR, as
    triton.compile does; returns (llir text, Triton's metadata)."""
    triton = _triton()
    from triton._C.libtriton import ir
    from triton.compiler.compiler import ASTSource, make_backend
    backend = make_backend(target)
    sig = dict(signature)
    sig.update({k: "constexpr" for k in constexprs})
    src = ASTSource(fn=fn, signature=sig, constexprs=dict(constexprs))
    opts = backend.parse_options(dict(options or {}, **src.parse_options()))
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    module = src.make_ir(target, opts, backend.get_codegen_implementation(opts),
                         backend.get_module_map(), context)
    metadata = {"target": target, **opts.__dict__, "triton_version": triton.__version__}
    stages = {}
    backend.add_stages(stages, opts, src.language)
    for ext, stage in stages.items():
        module = stage(module, metadata)
        if ext == "llir":
            return str(module), metadata
    raise InternalError(f"Triton's {target.backend} backend has no llir stage")


_KERNEL_DEFINE = re.compile(r"^define (?:ptx_kernel|amdgpu_kernel) [^@\n]*@([A-Za-z_][A-Za-z0-9_]*)\(",
                            re.MULTILINE)


def _mark_producer(llir, producer):
    """Triton's IR with the kernel's definition carrying ``"kiln-producer"``:
    a string attribute no code generator reads, so it changes the job's key
    (the canonical module's hash) without changing the code. IR from two
    Triton versions (two LLVMs) or two backend settings never shares a key."""
    kernels = _KERNEL_DEFINE.findall(llir)
    if len(kernels) != 1:
        raise InvalidArgumentError(f"Triton's LLVM IR defines {len(kernels)} kernels, not one")
    start = _KERNEL_DEFINE.search(llir).start()
    end = llir.index("\n", start)
    line = llir[start:end]
    at = line.rfind(" !dbg ") if " !dbg " in line else line.rfind(" {")
    attr = ' "kiln-producer"="' + producer.replace('"', "'") + '"'
    return kernels[0], llir[:start] + line[:at] + attr + line[at:] + llir[end:]


def _metadata_json(metadata, name, target, closure):
    """Triton's launch metadata as Kiln stores it: Triton's own fields (as in
    its cache's .json, without the paths of this machine's device libraries)
    plus the kernel's name, Kiln target and the GPU image's closure key."""
    fields = {k: v for k, v in metadata.items() if k not in ("extern_libs", "hash")}
    fields.update(name=name, kiln_target=target, kiln_closure=closure)
    return json.dumps(fields, default=vars, sort_keys=True)


def _metadata_ir(entry, text):
    data = text.encode() + b"\0"
    escaped = "".join(chr(b) if 32 <= b < 127 and b not in (34, 92) else f"\\{b:02X}" for b in data)
    return (f'@meta = private unnamed_addr constant [{len(data)} x i8] c"{escaped}", align 1\n\n'
            f"define ptr @{entry}() {{\n  ret ptr @meta\n}}\n")


class Precompiled:
    """What precompile stored for one kernel and target."""

    def __init__(self, name, requested, target, job, closure, image, metadata, frontend_ms,
                 kiln_ms):
        self.name, self.requested, self.target = name, requested, target  # target: kiln_target(requested)
        self.job, self.closure, self.image = job, closure, image
        self.metadata = metadata  # dict, as load() returns it
        self.frontend_ms, self.kiln_ms = frontend_ms, kiln_ms

    def __repr__(self):
        return f"<kiln.triton.Precompiled {self.name} {self.target} {self.closure}>"


def precompile(fn, signature, constexprs, targets, cache, options=None, opt=2):
    """Compiles ``fn`` (a ``@triton.jit`` function) for each target spec of
    ``targets`` through Kiln, with no GPU; returns a list of Precompiled.

    ``signature`` maps the non-constexpr parameters to Triton types
    (``"*fp32"``, ``"i32"``, ...), ``constexprs`` the constexpr ones to their
    values; ``options`` are Triton's (``num_warps``, ``num_stages``, ...).
    The kernel is recorded under Triton's kernel name for
    ``kiln_target(spec)``, its launch metadata under
    ``metadata_entry(name, kiln_target(spec))`` for the host."""
    import time
    triton = _triton()
    out = []
    for requested in ([targets] if isinstance(targets, str) else targets):
        spec = kiln_target(requested)
        target = gpu_target(spec)
        start = time.perf_counter()
        llir, metadata = _front_end(fn, signature, constexprs, target, options)
        frontend_ms = (time.perf_counter() - start) * 1e3
        fusion = metadata.get("enable_fp_fusion", True)
        producer = f"triton {triton.__version__} {target.backend} fp-fusion={int(bool(fusion))}"
        name, ir = _mark_producer(llir, producer)
        start = time.perf_counter()
        result = cache.compile(ir, entries=[name], targets=[spec], opt=opt)
        root = result.roots[0]
        entry = metadata_entry(name, spec)
        text = _metadata_json(metadata, name, spec, root.closure)
        cache.compile(_metadata_ir(entry, text), entries=[entry], targets=["host"], opt=0)
        kiln_ms = (time.perf_counter() - start) * 1e3
        job = next(j.key for j in result.jobs if j.entry == name)
        out.append(Precompiled(name, requested, spec, job, root.closure, root.image, json.loads(text),
                               frontend_ms, kiln_ms))
    return out


def metadata(name, target, cache):
    """The launch metadata precompile recorded for kernel ``name`` and
    ``target`` (a dict: Triton's fields, ``name``, ``kiln_target``,
    ``kiln_closure``). Needs neither Triton nor a GPU."""
    import ctypes  # only here: a process using Triton's cache manager never needs it
    entry = metadata_entry(name, kiln_target(target))
    with cache.load(entry, "host") as image:
        text = ctypes.CFUNCTYPE(ctypes.c_char_p)(image.function(entry))()
    return json.loads(text)


class Kernel:
    """A loaded precompiled Triton kernel: ``function`` (CUfunction or
    hipFunction_t, as an int), ``module``, ``metadata`` (dict) and ``image``
    (kiln.Image; the handles are valid while it is open)."""

    def __init__(self, image, metadata):
        self.image = image
        self.metadata = metadata
        self.module = image.module
        self.function = image.function(metadata["name"])

    def close(self):
        self.image.close()


def load(name, cache, target=None):
    """Loads kernel ``name`` precompiled for ``target`` (None: the present
    NVIDIA GPU, as kiln.present_target() finds it; name an AMD one, such as
    ``"gfx942"``) and returns a Kernel. The image loaded is the one the metadata
    names (by closure key), so a kernel and its metadata never come from two
    different compiles. Raises UnavailableError when there is no GPU."""
    if target is None:
        from . import present_target
        target = present_target()
        if target == "host":
            raise UnavailableError(f"no GPU here to load Triton kernel '{name}' on (Kiln's "
                                   "present target is the host)", entry=name)
    meta = metadata(name, target, cache)
    return Kernel(cache.load(meta["kiln_closure"], meta["kiln_target"]), meta)


# --- Kiln as Triton's cache ------------------------------------------------

_NETWORK_FS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "afs", "ceph", "lustre", "gpfs",
               "glusterfs", "beegfs", "orangefs", "ocfs2", "gfs2", "panfs")


def _network_fs_kind(path):
    """The network file system that holds ``path`` ("" for a local one), as
    Kiln's own cache decides it: $KILN_NETWORK_FS overrides ("0": local)."""
    env = os.environ.get("KILN_NETWORK_FS")
    if env:
        return "" if env == "0" else env
    path = os.path.realpath(path)
    best, kind = "", ""
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split()
                # Octal escapes (\040 for a space), undone without loading
                # a codec at the first kernel of every process.
                mount = fields[4]
                if "\\" in mount:
                    mount = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), mount)
                fstype = fields[fields.index("-") + 1]
                if (path == mount or path.startswith(mount.rstrip("/") + "/")) and len(mount) >= len(best):
                    best, kind = mount, fstype
    except (OSError, ValueError, IndexError):
        return ""
    if kind.startswith("fuse") or kind in _NETWORK_FS:
        return kind
    return ""


def triton_cache_path():
    """$KILN_TRITON_CACHE, else ``triton.db`` beside Kiln's default cache
    ($KILN_CACHE's directory, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln)."""
    path = os.environ.get("KILN_TRITON_CACHE")
    if path:
        return path
    if os.environ.get("KILN_CACHE"):
        return os.path.join(os.path.dirname(os.path.abspath(os.environ["KILN_CACHE"])), "triton.db")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kiln", "triton.db")


_SCHEMA = """
CREATE TABLE IF NOT EXISTS blobs (sha256 BLOB PRIMARY KEY, data BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS files (key TEXT NOT NULL, name TEXT NOT NULL, sha256 BLOB NOT NULL,
  PRIMARY KEY (key, name)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS groups (key TEXT NOT NULL, name TEXT NOT NULL, member TEXT NOT NULL,
  sha256 BLOB NOT NULL, PRIMARY KEY (key, name, member)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS recency (key TEXT NOT NULL, name TEXT NOT NULL, used INTEGER NOT NULL,
  PRIMARY KEY (key, name)) WITHOUT ROWID;
"""


class _Store:
    """One process's connection to a Triton cache file, shared by its
    threads. Every write is one IMMEDIATE transaction, so a group lands whole
    or not at all, and SQLite serialises the writers of every process."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        # Mode 0600 in a 0700 directory when created here, as Kiln's cache:
        # what it holds is code that runs in whoever reads it.
        os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600))
        self.db = sqlite3.connect(path, timeout=120, isolation_level=None,
                                  check_same_thread=False)
        self.files = os.path.abspath(path) + ".files"
        self.files_prefix = self.files + os.sep
        self.uid = os.getuid()
        os.makedirs(self.files, mode=0o700, exist_ok=True)
        st = os.stat(self.files)
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise UnavailableError(f"{self.files}: must be a directory of this user's with mode "
                                   f"0700 (it is {st.st_mode & 0o777:o}, owner {st.st_uid})")
        self.network = _network_fs_kind(path)
        self.settings = {}
        self.uses = {}
        self.pid = os.getpid()
        # A network file system cannot share WAL's memory map coherently:
        # a rollback journal there, as Kiln's own cache does.
        if self.network:
            self.db.execute("PRAGMA journal_mode=DELETE")
            self.db.execute("PRAGMA mmap_size=0")
            self.db.execute("PRAGMA synchronous=FULL")
        else:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
        # The schema is written only when a table is missing: a process
        # that finds it whole opens the file without a write transaction.
        statements = [t.strip() for t in _SCHEMA.strip().split(";") if t.strip()]
        tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not all(t.split()[5] in tables for t in statements):
            with self.transaction():
                for statement in statements:
                    self.db.execute(statement)

    def transaction(self):
        return _Transaction(self)

    def setting(self, name):
        """A setting's value (``require_signed``), read once per process."""
        if name not in self.settings:
            with self.lock:
                row = self.db.execute("SELECT value FROM settings WHERE name = ?", (name,)).fetchone()
            self.settings[name] = row[0] if row else None
        return self.settings[name]

    def put_file(self, key, name, data, digest):
        with self.transaction():
            self.db.execute("INSERT OR IGNORE INTO blobs VALUES (?, ?)", (digest, data))
            self.db.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?)", (key, name, digest))
            self.db.execute("INSERT OR REPLACE INTO recency VALUES (?, ?, ?)", (key, name, int(time.time())))

    def put_group(self, key, name, members):
        """members: {filename: (sha256, bytes or None)}; bytes where the blob
        may not be stored yet. One transaction: the group is whole or absent,
        and a group published again replaces the old one entirely."""
        with self.transaction():
            for digest, data in members.values():
                if data is not None:
                    self.db.execute("INSERT OR IGNORE INTO blobs VALUES (?, ?)", (digest, data))
            self.db.execute("DELETE FROM groups WHERE key = ? AND name = ?", (key, name))
            self.db.executemany("INSERT INTO groups VALUES (?, ?, ?, ?)",
                                [(key, name, m, d) for m, (d, _) in members.items()])
            self.db.execute("INSERT OR REPLACE INTO recency VALUES (?, ?, ?)", (key, name, int(time.time())))

    def used(self, key, name, when):
        """Notes a hit on an entry last marked used at ``when`` (None: never).
        Uses are kept in memory and written in one transaction when the
        process exits, and only for entries not marked within the day: the
        warm path writes nothing. gc evicts by this recency."""
        if when is None or when < time.time() - _RECENCY_GRAIN:
            with self.lock:
                if not self.uses:
                    import atexit
                    atexit.register(self.flush_uses)
                self.uses[(key, name)] = int(time.time())

    def flush_uses(self):
        if not self.uses or self.pid != os.getpid():
            return
        uses, self.uses = self.uses, {}
        try:
            with self.transaction():
                self.db.executemany("INSERT OR REPLACE INTO recency VALUES (?, ?, ?)",
                                    [(k, n, t) for (k, n), t in uses.items()])
        except sqlite3.Error:
            pass  # recency only orders gc's evictions

    def drop_damaged(self, digest):
        """Removes a blob whose bytes no longer match its digest, so that the
        next publish of that content stores it again."""
        with self.transaction():
            row = self.db.execute("SELECT data FROM blobs WHERE sha256 = ?", (digest,)).fetchone()
            if row is not None and (not isinstance(row[0], bytes)
                                    or hashlib.sha256(row[0]).digest() != digest):
                self.db.execute("DELETE FROM blobs WHERE sha256 = ?", (digest,))

    def get_group(self, key, name):
        """[(member, sha256, size or None when its blob is missing)]; sizes
        come from the records' headers, without reading the blobs."""
        with self.lock:
            return self.db.execute(
                "SELECT g.member, g.sha256, length(b.data), r.used FROM groups g LEFT JOIN blobs b "
                "ON b.sha256 = g.sha256 LEFT JOIN recency r ON r.key = g.key AND r.name = g.name "
                "WHERE g.key = ? AND g.name = ?", (key, name)).fetchall()

    def group_members(self, key, name):
        """[(member, sha256, used)]: the warm path's one read, of the groups
        table alone (a blob's size would mean a lookup in the blobs tree,
        whose rows are the files themselves, for every member)."""
        with self.lock:
            return self.db.execute(
                "SELECT g.member, g.sha256, r.used FROM groups g LEFT JOIN recency r "
                "ON r.key = g.key AND r.name = g.name WHERE g.key = ? AND g.name = ?",
                (key, name)).fetchall()

    def file_digest(self, key, name):
        """(sha256, used) of a file outside groups, or None."""
        with self.lock:
            return self.db.execute(
                "SELECT f.sha256, r.used FROM files f LEFT JOIN recency r "
                "ON r.key = f.key AND r.name = f.name WHERE f.key = ? AND f.name = ?",
                (key, name)).fetchone()

    def get_file(self, key, name):
        with self.lock:
            return self.db.execute(
                "SELECT f.sha256, length(b.data), r.used FROM files f LEFT JOIN blobs b "
                "ON b.sha256 = f.sha256 LEFT JOIN recency r ON r.key = f.key AND r.name = f.name "
                "WHERE f.key = ? AND f.name = ?", (key, name)).fetchone()

    def blob(self, digest):
        """The blob's bytes if they match their digest; a damaged one is
        dropped (so the next publish stores it again) and None returned."""
        with self.lock:
            row = self.db.execute("SELECT data FROM blobs WHERE sha256 = ?", (digest,)).fetchone()
        if row is None:
            return None
        if not isinstance(row[0], bytes) or hashlib.sha256(row[0]).digest() != digest:
            self.drop_damaged(digest)
            return None
        return row[0]

    def path_of(self, digest, name):
        """Where materialize puts blob ``digest`` for a member ``name``."""
        return self.files_prefix + digest.hex()[:32] + "." + name

    def in_place(self, path, size=None):
        """Whether ``path`` is a file materialize wrote and nobody changed
        since: a regular file (not a link), this user's, mode 0400, and of
        ``size`` bytes where the size is known. The warm path checks only
        this, without the blob's size: the name is the content's digest and
        the file was written whole from bytes checked against it, in a 0700
        directory only this user can enter, and it cannot be written again
        without first being made writable, which the mode check sees. (A
        change of content made after a chmod back to 0400 is not seen by a
        size check either: ``verify`` reads every file against its blob.)"""
        known = _materialized.get(path)
        if known is not None and (size is None or known == size):
            return True
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return False
        if ((st.st_mode & 0o177777) != 0o100400 or st.st_uid != self.uid
                or (size is not None and st.st_size != size)):
            return False
        _materialized[path] = st.st_size
        return True

    def materialize(self, digest, name, size, data=None):
        """The path of a read-only file holding blob ``digest``, named
        ``<digest>.<name>`` (Triton reads a file's kind from its suffix), in
        the directory beside the cache file (``<cache>.files``, mode 0700).
        A file there is written once, whole (a temporary file renamed into
        place, mode 0400), from bytes whose digest was checked, and never
        written again: a file of another size, mode or owner is replaced. So
        a process served from the cache reads the blob only the first time
        any process needs that file. None if the blob is missing or damaged."""
        path = self.path_of(digest, name)
        if self.in_place(path, size):
            return path
        if data is None:
            data = self.blob(digest)
            if data is None:
                return None
        fd, temp = tempfile.mkstemp(dir=self.files, prefix=".tmp-")
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, 0o400)
        except BaseException:
            os.close(fd)
            os.unlink(temp)
            raise
        os.close(fd)
        os.replace(temp, path)
        _materialized[path] = len(data)
        return path


class _Transaction:
    def __init__(self, store):
        self.store = store

    def __enter__(self):
        self.store.lock.acquire()
        try:
            self.store.db.execute("BEGIN IMMEDIATE")
        except BaseException:
            self.store.lock.release()
            raise

    def __exit__(self, kind, value, tb):
        try:
            self.store.db.execute("COMMIT" if kind is None else "ROLLBACK")
        finally:
            self.store.lock.release()


_RECENCY_GRAIN = 86400  # seconds: how stale a use may be before it is written
_stores = {}
_stores_lock = threading.Lock()
_materialized = {}  # path -> size, of files this process found or wrote whole


def _store(path):
    # Triton makes a manager per kernel: an absolute path already seen
    # finds its store without being normalised again.
    store = _stores.get((os.getpid(), path))
    if store is not None:
        return store
    key = (os.getpid(), os.path.abspath(path))
    with _stores_lock:
        if key not in _stores:
            _stores[key] = _Store(path)
        return _stores[key]


# --- Single-flight: a group compiled once across the processes of a file ----

_CLAIMS_TABLE = ("CREATE TABLE IF NOT EXISTS claims (claim_key TEXT PRIMARY KEY, holder TEXT NOT NULL, "
                 "host TEXT NOT NULL, host_name TEXT NOT NULL, pid INTEGER NOT NULL, "
                 "pid_start INTEGER NOT NULL, beat INTEGER NOT NULL, claimed_at INTEGER NOT NULL) "
                 "WITHOUT ROWID")


def _env_number(name, fallback, least):
    try:
        n = int(os.environ.get(name, ""))
    except ValueError:
        return fallback
    return n if n >= least else fallback


def _process_start(pid):
    """(start of process ``pid`` in clock ticks after boot, field 22 of
    /proc/PID/stat; whether it is a zombie), or None if no such process runs."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            line = f.read()
    except OSError:
        return None
    # The command name, in parentheses, may hold anything: fields are
    # counted after its last ')'. fields[0] is field 3, the state.
    fields = line[line.rfind(b")") + 1:].split()
    try:
        return int(fields[19]), fields[0] == b"Z"
    except (IndexError, ValueError):
        return None


def _this_host():
    """One machine: one boot and one pid namespace, where a pid names the
    same process (as Kiln's own claims say it)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        boot = ""
    try:
        ns = str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        ns = "?"
    return (boot or "?") + "/" + ns


_flight_stats = dict(claimed=0, waited=0, theirs=0, took_over=0, unclaimed=0, waited_s=0.0)


def flight_stats():
    """This process's single-flight figures for Triton's cache:
    ``claimed`` (misses this process claimed and compiled), ``waited``
    (misses another process held), ``theirs`` (of those, served by the
    holder's compile), ``took_over`` (claims taken from a holder that died or
    stopped beating), ``unclaimed`` (misses compiled without a claim: an
    error, the wait limit, or ``KILN_SINGLE_FLIGHT=0``), ``waited_s``."""
    return dict(_flight_stats)


class _Flight:
    """This process's claims on the groups of one Triton cache file, so that
    of the processes that miss the same group only one compiles it, as Kiln's
    own cache does for jobs (README, "Starting as a fleet").

    A miss claims the group (a row of ``claims``, made by the first claim):
    the holder compiles and publishes it, and its claim goes with the
    publish. Others that miss it wait, reading the claim and the group every
    poll, and are served the group once it is published. A claim belongs to
    a live holder: a daemon thread bumps its beat every quarter of the lease
    term. A waiter takes the claim over, by a compare-and-set on (holder,
    beat) in one transaction, when the beat has not moved for a whole term on
    the waiter's own clock (no two clocks are compared), or at once when the
    holder ran on this machine and its process is gone (its pid not running,
    running another process, or a zombie). Nothing waits forever: a holder
    still beating after ``KILN_CLAIM_WAIT_S`` is outwaited, and any error
    with claims means compiling without waiting."""

    POLL = 0.02  # seconds between a waiter's reads of the claim

    def __init__(self, store):
        self.store = store
        self.term = _env_number("KILN_CLAIM_LEASE_MS", 2000, 100) / 1000
        self.wait_limit = _env_number("KILN_CLAIM_WAIT_S", 600, 1)
        start = _process_start(os.getpid())
        self.me = (os.urandom(16).hex(), _this_host(), socket.gethostname(), os.getpid(),
                   start[0] if start else 0)
        self.held = {}  # claim key -> how many of this process's managers hold it
        self.cv = threading.Condition()
        self.beating = False
        self.exit_hook = False

    @staticmethod
    def enabled():
        return os.environ.get("KILN_SINGLE_FLIGHT", "") not in ("0", "off")

    def acquire(self, key, name):
        """"mine" (this process holds the claim: compile, then publish),
        "stored" (the group is published: read it) or "unclaimed" (compile
        without a claim)."""
        claim_key = key + "/" + name
        start = time.monotonic()
        lapsed, waited = None, False
        try:
            while True:
                state, row = self._claim(claim_key, key, name, lapsed)
                if state != "held":
                    if waited and state == "stored":
                        _flight_stats["theirs"] += 1
                    elif state == "mine" and lapsed is not None:
                        _flight_stats["took_over"] += 1
                    return state
                if not waited:
                    waited = True
                    _flight_stats["waited"] += 1
                lapsed, state = self._wait(claim_key, key, name, row, start)
                if state == "stored":
                    _flight_stats["theirs"] += 1
                if state is not None:
                    return state
        except Exception:  # claims never fail a compile: this one goes on unclaimed
            _flight_stats["unclaimed"] += 1
            return "unclaimed"
        finally:
            if waited:
                _flight_stats["waited_s"] += time.monotonic() - start

    def _claim(self, claim_key, key, name, lapsed):
        """One transaction: the group's state, and this process's claim on it
        if nobody else holds one (after taking it from ``lapsed``, the
        (holder, beat) a waiter found dead, only if it is still that)."""
        db = self.store.db
        with self.store.transaction():
            db.execute(_CLAIMS_TABLE)
            if self._stored(key, name):
                return "stored", None
            if lapsed is not None:
                db.execute("DELETE FROM claims WHERE claim_key = ? AND holder = ? AND beat = ?",
                           (claim_key,) + lapsed)
            db.execute("INSERT OR IGNORE INTO claims VALUES (?, ?, ?, ?, ?, ?, 0, ?)",
                       (claim_key,) + self.me + (int(time.time() * 1000),))
            row = db.execute("SELECT holder, host, pid, pid_start, beat FROM claims WHERE claim_key = ?",
                             (claim_key,)).fetchone()
        if row[0] != self.me[0]:
            return "held", row
        with self.cv:
            self.held[claim_key] = self.held.get(claim_key, 0) + 1
            if not self.exit_hook:
                import atexit
                atexit.register(self.release_all)
                self.exit_hook = True
            if not self.beating:
                self.beating = True
                threading.Thread(target=self._beat, name="kiln-triton-claims", daemon=True).start()
        _flight_stats["claimed"] += 1
        return "mine", None

    def _stored(self, key, name):
        """Whether the group is published with every member's blob (a group
        missing one is compiled again: that needs a claim too)."""
        n, present = self.store.db.execute(
            "SELECT count(*), count(b.sha256) FROM groups g LEFT JOIN blobs b ON b.sha256 = g.sha256 "
            "WHERE g.key = ? AND g.name = ?", (key, name)).fetchone()
        return n > 0 and n == present

    def _wait(self, claim_key, key, name, row, start):
        """Polls until the group is published ((None, "stored")), the claim
        is free or lapsed ((the (holder, beat) to take it from, None)), or the
        wait limit passes ((None, "unclaimed"))."""
        seen, seen_at = row, time.monotonic()
        while True:
            time.sleep(self.POLL)
            now = time.monotonic()
            with self.store.lock:
                if self._stored(key, name):
                    return None, "stored"
                current = self.store.db.execute(
                    "SELECT holder, host, pid, pid_start, beat FROM claims WHERE claim_key = ?",
                    (claim_key,)).fetchone()
            if current is None:
                return None, None
            if (current[0], current[4]) != (seen[0], seen[4]):
                seen, seen_at = current, now
            if now - start >= self.wait_limit:
                _flight_stats["unclaimed"] += 1
                return None, "unclaimed"
            if now - seen_at >= self.term or self._gone(current):
                return (current[0], current[4]), None

    def _gone(self, row):
        """Whether the holder is known to be gone: it ran on this machine and
        its pid runs no process, another one, or a zombie. Another machine's
        holder is never known to be gone."""
        _, host, pid, pid_start, _ = row
        if host != self.me[1] or host.startswith("?") or pid <= 0:
            return False
        s = _process_start(pid)
        return s is None or s[0] != pid_start or s[1]

    def _beat(self):
        while True:
            with self.cv:
                self.cv.wait(self.term / 4)
                if not self.held or self.me[3] != os.getpid():
                    self.beating = False
                    return
            try:
                with self.store.transaction():
                    self.store.db.execute("UPDATE claims SET beat = beat + 1 WHERE holder = ?",
                                          (self.me[0],))
            except sqlite3.Error:
                pass  # a beat missed: a waiter may take the claim over, and compile too

    def release(self, claim_keys):
        """Lets go of the claims of ``claim_keys`` (a manager's set, emptied):
        their groups are published, or will not be. A claim that another
        manager of this process holds too is kept for that one."""
        with self.cv:
            keys = []
            for k in claim_keys:
                if k in self.held:
                    self.held[k] -= 1
                    if not self.held[k]:
                        del self.held[k]
                        keys.append(k)
            claim_keys.clear()
        if not keys or self.me[3] != os.getpid():
            return
        try:
            with self.store.transaction():
                self.store.db.executemany("DELETE FROM claims WHERE claim_key = ? AND holder = ?",
                                          [(k, self.me[0]) for k in keys])
        except sqlite3.Error:
            pass  # the claim lapses: this process stops beating it

    def release_all(self):
        with self.cv:
            self.held = dict.fromkeys(self.held, 1)
        self.release(set(self.held))


_flights = {}


def _flight(store):
    with _stores_lock:
        if store not in _flights:
            _flights[store] = _Flight(store)
        return _flights[store]


# --- Kiln's Redis tier for Triton's cache -----------------------------------

class _RemoteError(Exception):
    """The server did not answer, or answered with an error."""


class _Rejected(Exception):
    """A value that fails its checks: damaged, misfiled, or not signed as required."""


def _remote_config(url=None):
    """Kiln's Redis tier as ``$KILN_REMOTE`` names it (README, "Shared cache
    (Redis)"): ``redis://[user:password@]host[:port][/db][?prefix=..&ttl=..
    &timeout_ms=..&read_only=1]``; None when unset or ``off``. A bad URL is
    an InvalidArgumentError that never shows the credentials."""
    url = os.environ.get("KILN_REMOTE", "") if url is None else url
    if not url or url == "off":
        return None

    def bad(why):
        raise InvalidArgumentError(f"KILN_REMOTE: {why}")

    def number(text, what, low, high):
        if not text.isdigit() or not low <= int(text) <= high:
            bad(f"{what} must be a number from {low} to {high}")
        return int(text)

    if url.startswith("rediss://"):
        bad("rediss:// (TLS) is not supported; use redis:// over a trusted network or a TLS tunnel")
    if not url.startswith("redis://"):
        bad("must start with redis://")
    rest, _, query = url[len("redis://"):].partition("?")
    rest, _, path = rest.partition("/")
    config = dict(user="", password="", port=6379, db=0, prefix="kiln", ttl=0, timeout=1.0,
                  read_only=os.environ.get("KILN_REMOTE_READ_ONLY") == "1")
    if "@" in rest:
        cred, _, rest = rest.rpartition("@")
        user, colon, password = cred.partition(":")
        if not colon:  # redis://password@host, as redis-cli -u takes it
            user, password = "", cred
        config.update(user=urllib.parse.unquote(user), password=urllib.parse.unquote(password))
    if rest.startswith("["):
        host, _, port = rest[1:].partition("]")
        port = port[1:] if port.startswith(":") else (port and bad("junk after the host's ]"))
    else:
        host, _, port = rest.rpartition(":") if ":" in rest else (rest, "", "")
    if not host:
        bad("no host")
    config["host"] = host
    if port:
        config["port"] = number(port, "the port", 1, 65535)
    if path:
        config["db"] = number(path, "the database number", 0, 1 << 20)
    for option in filter(None, query.split("&")):
        k, _, v = option.partition("=")
        if k == "prefix":
            if not v or re.search(r"\s", v):
                bad("prefix must be a non-empty word")
            config["prefix"] = v
        elif k == "ttl":
            config["ttl"] = number(v, "ttl", 0, 1 << 40)
        elif k == "timeout_ms":
            config["timeout"] = number(v, "timeout_ms", 1, 600000) / 1000
        elif k == "read_only":
            if v not in ("", "0", "1"):
                bad("read_only must be 0 or 1")
            config["read_only"] = config["read_only"] or v != "0"
        else:
            bad(f"unknown option '{k}' (known: prefix, ttl, timeout_ms, read_only)")
    config["where"] = f"redis://{host}:{config['port']}/{config['db']}"
    return config


class _Redis:
    """A Redis connection speaking RESP, opened at the first command (AUTH and
    SELECT as the URL says), every call bounded by the URL's timeout. A failed
    call closes it; a forked child opens its own."""

    def __init__(self, config):
        self.config = config
        self.sock = self.reader = None
        self.pid = None

    def close(self):
        if self.sock is not None:
            self.sock.close()
        self.sock = self.reader = None

    def _connect(self):
        c = self.config
        self.close()
        self.sock = socket.create_connection((c["host"], c["port"]), timeout=c["timeout"])
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("rb")
        self.pid = os.getpid()
        if c["password"]:
            self._call(["AUTH", c["user"], c["password"]] if c["user"] else ["AUTH", c["password"]])
        if c["db"]:
            self._call(["SELECT", str(c["db"])])

    def call(self, *args):
        try:
            if self.sock is None or self.pid != os.getpid():
                self._connect()
            return self._call(args)
        except (OSError, EOFError, ValueError) as e:
            self.close()
            why = "no answer within %d ms" % (self.config["timeout"] * 1000) \
                if isinstance(e, socket.timeout) else (e.strerror or str(e)) if isinstance(e, OSError) else str(e)
            raise _RemoteError(why) from None
        except _RemoteError:
            self.close()
            raise

    def _call(self, args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, (bytes, bytearray, memoryview)) else str(a).encode()
            out += [b"$%d\r\n" % len(a), a, b"\r\n"]
        self.sock.sendall(b"".join(out))
        return self._reply()

    def _reply(self):
        line = self.reader.readline()
        if not line.endswith(b"\r\n"):
            raise EOFError("the server closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise _RemoteError("the server answered: " + rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.reader.read(n + 2)
            if len(data) != n + 2:
                raise EOFError("the server closed the connection")
            return data[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise ValueError("not a Redis reply")


_signing_cache = {}


def _signing_key():
    """The secret of ``$KILN_SIGNING_KEY`` (hex, else base64, or ``@FILE``
    holding either; at least 32 bytes), as Kiln's storage reads it; None
    when unset. Messages never show it."""
    text = os.environ.get("KILN_SIGNING_KEY", "").strip()
    if not text:
        return None
    if text in _signing_cache:
        return _signing_cache[text]
    where, value = "KILN_SIGNING_KEY", text
    if value.startswith("@"):
        path = value[1:].strip()
        try:
            with open(path) as f:
                value = f.read().strip()
        except OSError as e:
            raise InvalidArgumentError(f"{where}: cannot read the key file '{path}': {e.strerror}") from None
        where += f" (file '{path}')"
    secret = None
    if value and re.fullmatch(r"(?:[0-9A-Fa-f]{2})+", value):
        secret = bytes.fromhex(value)
    else:
        bare = value.rstrip("=")
        for alt in (None, b"-_"):
            try:
                secret = base64.b64decode(bare + "=" * (-len(bare) % 4), altchars=alt, validate=True)
                break
            except ValueError:
                pass
    if not value:
        raise InvalidArgumentError(f"{where}: the signing key is empty")
    if secret is None:
        raise InvalidArgumentError(f"{where}: the signing key is neither hex nor base64")
    if len(secret) < 32:
        raise InvalidArgumentError(f"{where}: the signing key holds {len(secret)} bytes; it needs at least 32")
    _signing_cache[text] = secret
    return secret


def _signatures_required(store=None):
    """``$KILN_REQUIRE_SIGNED=1``, or the Triton cache's ``require_signed``
    setting (``python -m kiln.triton config require_signed 1``)."""
    env = os.environ.get("KILN_REQUIRE_SIGNED", "")
    if env not in ("", "0", "1"):
        raise InvalidArgumentError("KILN_REQUIRE_SIGNED must be 0 or 1")
    if env == "1":
        return True
    return store is not None and store.setting("require_signed") == "1"


def _mac(secret, content):
    """HMAC-SHA-512-256, as Kiln signs bundles and remote values."""
    return hmac.new(secret, content, hashlib.sha512).digest()[:32]


_VALUE_MAGIC = b"KILNTRT\x01"
_HEAD = struct.Struct("<BII")    # signed, len(ident), members
_MEMBER = struct.Struct("<HQ")   # len(name), len(data); then name, sha256(data)


def encode_value(ident, members, secret=None):
    """One remote value holding ``members`` ({filename: bytes}): a header
    naming ``ident`` (what the value is filed under, so a value copied under
    another key is refused), each member's name, size and SHA-256, the
    members' bytes, a SHA-256 of all that, and, with a secret, an
    HMAC-SHA-512-256 over everything before it."""
    ident = ident.encode()
    table, data = [], []
    for name in sorted(members):
        raw, blob = name.encode(), members[name]
        table.append(_MEMBER.pack(len(raw), len(blob)) + raw + hashlib.sha256(blob).digest())
        data.append(blob)
    body = b"".join([_VALUE_MAGIC, _HEAD.pack(secret is not None, len(ident), len(members)), ident]
                    + table + data)
    body += hashlib.sha256(body).digest()
    return body + _mac(secret, body) if secret is not None else body


def decode_value(value, ident, secret=None, required=False):
    """The members of a value encode_value made, once every check passes
    (signature as Kiln's Signing::check decides, checksums, the ident);
    raises _Rejected saying why not."""
    view = memoryview(value)
    if len(value) < len(_VALUE_MAGIC) + _HEAD.size + 32 or bytes(view[:8]) != _VALUE_MAGIC:
        raise _Rejected("it is not a Kiln Triton value")
    signed, ident_len, count = _HEAD.unpack_from(view, 8)
    if signed > 1 or (signed and len(value) < 8 + _HEAD.size + 64):
        raise _Rejected("its header is damaged")
    end = len(value) - 32 * signed
    if signed and secret is not None:
        if not hmac.compare_digest(bytes(view[end:]), _mac(secret, view[:end])):
            raise _Rejected("its signature does not match KILN_SIGNING_KEY (signed with another "
                            "key, or altered since)")
    elif required:
        raise _Rejected("signatures are required, and no KILN_SIGNING_KEY is set to check its signature"
                        if signed else "it is not signed, and signatures are required "
                        "(KILN_REQUIRE_SIGNED or the cache's require_signed setting)")
    if hashlib.sha256(view[:end - 32]).digest() != bytes(view[end - 32:end]):
        raise _Rejected("its checksum does not match (damaged)")
    pos = 8 + _HEAD.size
    try:
        if bytes(view[pos:pos + ident_len]).decode() != ident:
            raise _Rejected("it is filed under another key")
        pos += ident_len
        table = []
        for _ in range(count):
            name_len, size = _MEMBER.unpack_from(view, pos)
            pos += _MEMBER.size
            table.append((bytes(view[pos:pos + name_len]).decode(), size,
                          bytes(view[pos + name_len:pos + name_len + 32])))
            pos += name_len + 32
        members = {}
        for name, size, digest in table:
            blob = bytes(view[pos:pos + size])
            pos += size
            if len(blob) != size or hashlib.sha256(blob).digest() != digest:
                raise _Rejected(f"member {name} is damaged")
            members[name] = blob
    except (struct.error, UnicodeDecodeError):
        raise _Rejected("its member table is damaged") from None
    if pos != end - 32:
        raise _Rejected("its member table is damaged")
    return members


_warned = set()


def _warn_once(what, message):
    if what not in _warned:
        _warned.add(what)
        import warnings
        warnings.warn(message, RuntimeWarning, stacklevel=3)


class _Tier:
    """This process's use of Kiln's Redis tier for Triton's files. A group is
    one value (``<prefix>:v1:triton-group:<Triton's key>:<group file>``),
    written with one SET: readers see one writer's whole group or none. A
    file outside a group is one value too (``triton-file``). The first
    failure to reach the server warns once and turns the tier off for the
    process, which works locally from then on."""

    def __init__(self, config):
        self.config = config
        self.redis = _Redis(config)
        self.lock = threading.Lock()
        self.down = False
        self.stats = dict(hits=0, misses=0, rejected=0, errors=0, published=0, bytes_in=0,
                          bytes_out=0)

    def _ident(self, kind, key, name):
        return f"{kind}:{key}:{name}"

    def fetch(self, kind, key, name, required):
        if self.down:
            return None
        ident = self._ident(kind, key, name)
        with self.lock:
            try:
                value = self.redis.call("GET", f"{self.config['prefix']}:v1:{ident}")
            except _RemoteError as e:
                self._fail(e)
                return None
        if value is None:
            self.stats["misses"] += 1
            return None
        self.stats["bytes_in"] += len(value)
        try:
            members = decode_value(value, ident, _signing_key(), required)
        except _Rejected as e:
            self.stats["rejected"] += 1
            _warn_once(("rejected", ident), f"kiln.triton: {self.config['where']}: {kind} {key}/{name} "
                       f"rejected ({e}); compiling locally")
            return None
        self.stats["hits"] += 1
        return members

    def publish(self, kind, key, name, members):
        if self.down or self.config["read_only"]:
            return
        ident = self._ident(kind, key, name)
        value = encode_value(ident, members, _signing_key())
        command = ["SET", f"{self.config['prefix']}:v1:{ident}", value]
        if self.config["ttl"]:
            command += ["EX", self.config["ttl"]]
        with self.lock:
            try:
                self.redis.call(*command)
            except _RemoteError as e:
                self._fail(e)
                return
        self.stats["published"] += 1
        self.stats["bytes_out"] += len(value)

    def _fail(self, error):
        self.stats["errors"] += 1
        self.down = True
        _warn_once(("down", self.config["where"]), f"kiln.triton: {self.config['where']} is unavailable "
                   f"({error}); Triton's cache works locally in this process")


_tiers = {}


def _tier():
    """The process's tier for ``$KILN_REMOTE``; None when it names none."""
    url = os.environ.get("KILN_REMOTE", "")
    if not url or url == "off":
        return None
    key = (os.getpid(), url, os.environ.get("KILN_REMOTE_READ_ONLY", ""))
    with _stores_lock:
        if key not in _tiers:
            _tiers[key] = _Tier(_remote_config(url))
        return _tiers[key]


def remote_stats():
    """This process's figures for the Redis tier ({} without one): hits,
    misses, rejected, errors, published, bytes_in, bytes_out."""
    tier = _tier()
    return dict(tier.stats) if tier else {}


_GROUP_PREFIX = "__grp__"


class RemoteCacheBackend:
    """Kiln's Redis tier as Triton's remote cache backend, for Triton's own
    remote cache manager::

        TRITON_CACHE_MANAGER=triton.runtime.cache:RemoteCacheManager
        TRITON_REMOTE_CACHE_BACKEND=kiln.triton:RemoteCacheBackend
        KILN_REMOTE=redis://host:6379/0

    Triton's manager puts a kernel's files one by one and then a group file
    listing them (``__grp__<name>.json``). This backend publishes the group
    when its group file is put, as one value holding every member this
    process put under that key: one SET, so it is never torn nor mixed with
    another writer's files. A group is fetched the same way, whole and
    checked (checksums; the signature with ``KILN_SIGNING_KEY``, required by
    ``KILN_REQUIRE_SIGNED=1``), and its members are served from that one
    value. A value that fails a check is a miss, with a warning; a server
    that cannot be reached is a miss for the rest of the process, with one
    warning, and Triton compiles locally.

    ``kiln.triton:CacheManager`` uses the same tier, under its local cache
    file, whenever ``KILN_REMOTE`` is set; the two share values."""

    def __init__(self, key):
        self.key = key
        self._tier = _tier()
        if self._tier is None:
            raise UnavailableError("kiln.triton.RemoteCacheBackend: KILN_REMOTE names no Redis "
                                   "server (redis://host:port/db)")
        self._put = {}      # filename -> bytes this process put under the key
        self._fetched = {}  # filename -> bytes of groups fetched whole

    def get(self, filenames):
        out = {}
        for filename in filenames:
            if filename in self._fetched:
                out[filename] = self._fetched[filename]
            elif filename.startswith(_GROUP_PREFIX):
                name = filename[len(_GROUP_PREFIX):]
                members = self._tier.fetch("triton-group", self.key, name, _signatures_required())
                if members and name in members:
                    self._fetched.update(members)
                    out[filename] = json.dumps({"child_paths": sorted(members)}).encode()
            else:
                members = self._tier.fetch("triton-file", self.key, filename, _signatures_required())
                if members and filename in members:
                    out[filename] = members[filename]
        return out

    def put(self, filename, data):
        data = bytes(data) if isinstance(data, (bytes, bytearray, memoryview)) else str(data).encode()
        if filename.startswith(_GROUP_PREFIX):
            name = filename[len(_GROUP_PREFIX):]
            try:
                children = json.loads(data)["child_paths"]
            except (ValueError, KeyError, TypeError):
                return
            if name in children and all(c in self._put for c in children):
                self._tier.publish("triton-group", self.key, name, {c: self._put[c] for c in children})
            return
        self._put[filename] = data
        self._tier.publish("triton-file", self.key, filename, {filename: data})


class CacheManager:
    """Triton's cache in a SQLite file, for
    ``TRITON_CACHE_MANAGER=kiln.triton:CacheManager``; the file is
    ``triton_cache_path()`` ($KILN_TRITON_CACHE).

    Many processes may share it (local disk: WAL; network file systems: a
    rollback journal). Files are content-addressed (SHA-256); a group (a
    kernel's .json and its IR and binary files) is published in one
    transaction, so a reader sees a whole group from one writer or none,
    never a mix. Triton is handed read-only files (mode 0400) named by their
    digest in ``<cache>.files`` (mode 0700), each written whole once, from
    bytes whose digest was checked as they left the cache file, and never
    written again. A damaged or missing member makes the group a miss, and
    Triton compiles again. Processes that miss the same group at once
    compile it once: the first claims it, the others wait for its publish
    (``_Flight``). Dump and override directories stay Triton's own."""

    def __init__(self, key, override=False, dump=False):
        self.key = key
        self._delegate = None
        if override or dump:
            from triton.runtime.cache import FileCacheManager
            self._delegate = FileCacheManager(key, override=override, dump=dump)
            return
        self._store = _store(triton_cache_path())
        self._tier = _tier()
        self._staged = {}  # path handed out by put() -> (sha256, bytes)
        self._claims = set()  # claim keys of the groups this manager is compiling

    def _fetch(self, kind, filename):
        """Members of a value fetched from the Redis tier, or None."""
        if self._tier is None:
            return None
        members = self._tier.fetch(kind, self.key, filename, _signatures_required(self._store))
        return members if members and filename in members else None

    def get_file(self, filename):
        if self._delegate:
            return self._delegate.get_file(filename)
        store = self._store
        found = store.file_digest(self.key, filename)
        if found is not None:
            path = store.path_of(found[0], filename)
            if store.in_place(path):
                store.used(self.key, filename, found[1])
                return path
        row = store.get_file(self.key, filename)
        if row is None or row[1] is None:
            members = self._fetch("triton-file", filename)
            if members is None:
                return None
            data = members[filename]
            digest = hashlib.sha256(data).digest()
            self._store.put_file(self.key, filename, data, digest)
            return self._store.materialize(digest, filename, len(data), data)
        self._store.used(self.key, filename, row[2])
        return self._store.materialize(row[0], filename, row[1])

    def put(self, data, filename, binary=True):
        if self._delegate:
            return self._delegate.put(data, filename, binary)
        # As Triton's file cache writes them: bytes as they are, anything else
        # (text, an MLIR module) as its text.
        data = bytes(data) if isinstance(data, (bytes, bytearray)) else str(data).encode()
        digest = hashlib.sha256(data).digest()
        self._store.put_file(self.key, filename, data, digest)
        if self._tier is not None:
            self._tier.publish("triton-file", self.key, filename, {filename: data})
        path = self._store.materialize(digest, filename, len(data), data)
        self._staged[path] = (digest, data)
        return path

    def get_group(self, filename):
        if self._delegate:
            return self._delegate.get_group(filename)
        store = self._store
        members = store.group_members(self.key, filename)
        if members:
            # Warm: every member's file is in place, as the first process
            # served the group left it. One read, and a stat per member.
            group = {}
            for member, digest, _ in members:
                path = store.path_of(digest, member)
                if not store.in_place(path):
                    break
                group[member] = path
            else:
                store.used(self.key, filename, members[0][2])
                return group
        rows = store.get_group(self.key, filename) if members else None
        if rows:
            group = self._serve(filename, rows)
            if group is not None:
                return group
        else:
            members = self._fetch("triton-group", filename)
            if members is not None:
                # The group as the tier holds it, stored locally in one
                # transaction and handed out from the bytes just checked.
                staged = {m: (hashlib.sha256(d).digest(), d) for m, d in members.items()}
                self._store.put_group(self.key, filename, staged)
                return {m: self._store.materialize(digest, m, len(d), d)
                        for m, (digest, d) in staged.items()}
        # A miss: Triton compiles the group next, unless another process
        # already is; then this one waits for that compile and is served it.
        if not _Flight.enabled():
            _flight_stats["unclaimed"] += 1
            return None
        try:
            flight = _flight(self._store)
        except Exception:  # as acquire's errors: compiled unclaimed
            _flight_stats["unclaimed"] += 1
            return None
        state = flight.acquire(self.key, filename)
        if state == "stored":
            rows = self._store.get_group(self.key, filename)
            return self._serve(filename, rows) if rows else None
        if state == "mine":
            claim_key = self.key + "/" + filename
            if claim_key in self._claims:
                flight.release({claim_key})  # this manager holds it once already
            elif not self._claims:
                # A compile that fails leaves its claim to this manager,
                # which Triton drops with the failed compile's frame.
                weakref.finalize(self, flight.release, self._claims)
            self._claims.add(claim_key)
        return None

    def _serve(self, filename, rows):
        """The group's files from its rows, or None (with a warning) when a
        member is missing or damaged."""
        group = {}
        for member, digest, size, _ in rows:
            path = self._store.materialize(digest, member, size) if size is not None else None
            if path is None:
                import warnings
                warnings.warn(f"kiln.triton: {self._store.path}: group {self.key}/{filename}: "
                              f"member {member} is missing or damaged; compiling again")
                return None
            group[member] = path
        self._store.used(self.key, filename, rows[0][3])
        return group

    def put_group(self, filename, group):
        if self._delegate:
            return self._delegate.put_group(filename, group)
        members = {}
        for member, path in group.items():
            staged = self._staged.get(path)
            if staged is None:  # a file this manager did not write: take its bytes now
                with open(path, "rb") as f:
                    data = f.read()
                staged = (hashlib.sha256(data).digest(), data)
            members[member] = staged
        self._store.put_group(self.key, filename, members)
        if self._claims:
            _flight(self._store).release(self._claims)
        if self._tier is not None:
            self._tier.publish("triton-group", self.key, filename,
                               {m: d for m, (_, d) in members.items()})
        self._staged.clear()
        return group.get(filename)


# --- Administration: python -m kiln.triton ls|verify|gc|export|import|config ---

def _size(text):
    m = re.fullmatch(r"(\d+)([KMGT]?)i?B?", text.strip(), re.IGNORECASE)
    if not m:
        raise InvalidArgumentError(f"'{text}' is not a size (500M, 2G, 1048576)")
    return int(m.group(1)) << (10 * " KMGT".index(m.group(2).upper() or " "))


def _age(text):
    m = re.fullmatch(r"(\d+)([smhdw])", text.strip())
    if not m:
        raise InvalidArgumentError(f"'{text}' is not an age (30d, 12h, 90m)")
    return int(m.group(1)) * dict(s=1, m=60, h=3600, d=86400, w=604800)[m.group(2)]


def _entries(store):
    """Every group and file: [{kind, key, name, members: {member: sha256}, bytes, used}]."""
    db = store.db
    out = {}
    for kind, query in (("group", "SELECT g.key, g.name, g.member, g.sha256, length(b.data) FROM "
                                  "groups g LEFT JOIN blobs b ON b.sha256 = g.sha256"),
                        ("file", "SELECT f.key, f.name, f.name, f.sha256, length(b.data) FROM "
                                 "files f LEFT JOIN blobs b ON b.sha256 = f.sha256")):
        for key, name, member, digest, size in db.execute(query):
            e = out.setdefault((kind, key, name), dict(kind=kind, key=key, name=name, members={},
                                                       bytes=0, missing=[], used=0))
            e["members"][member] = digest
            e["bytes"] += size or 0
            if size is None:
                e["missing"].append(member)
    for key, name, used in db.execute("SELECT key, name, used FROM recency"):
        for kind in ("group", "file"):
            if (kind, key, name) in out:
                out[(kind, key, name)]["used"] = used
    return sorted(out.values(), key=lambda e: (e["used"], e["kind"], e["key"], e["name"]))


def _ls(store, args):
    rows = _entries(store)
    if args.json:
        print(json.dumps([dict(e, members=sorted(e["members"])) for e in rows], indent=1))
        return 0
    for e in rows:
        used = time.strftime("%Y-%m-%d %H:%M", time.localtime(e["used"])) if e["used"] else "-"
        print(f"{e['kind']:5} {e['key'][:16]}  {e['name']:40} {len(e['members']):3} files "
              f"{e['bytes']:>10} B  used {used}")
    total = store.db.execute("SELECT count(*), coalesce(sum(length(data)), 0) FROM blobs").fetchone()
    print(f"{sum(e['kind'] == 'group' for e in rows)} groups, {sum(e['kind'] == 'file' for e in rows)} "
          f"files, {total[0]} blobs, {total[1]} bytes")
    return 0


def verify_cache(store):
    """Every problem of a Triton cache file as a list of strings: blobs whose
    bytes do not match their digest, groups and files whose members are
    missing, and materialized files that differ from their blob."""
    problems = []
    for digest, data in store.db.execute("SELECT sha256, data FROM blobs"):
        if not isinstance(data, bytes) or hashlib.sha256(data).digest() != digest:
            problems.append(f"blob {digest.hex()}: its bytes do not match their SHA-256")
    for e in _entries(store):
        for member in e["missing"]:
            problems.append(f"{e['kind']} {e['key']}/{e['name']}: member {member} has no blob")
    known = {d.hex()[:32]: d for (d,) in store.db.execute("SELECT sha256 FROM blobs")}
    for entry in sorted(os.listdir(store.files)):
        path = os.path.join(store.files, entry)
        digest = known.get(entry.split(".", 1)[0])
        if entry.startswith(".tmp-") or digest is None:
            continue  # a write under way, or a file of an entry gc evicted
        st = os.lstat(path)
        if (st.st_mode & 0o7777) != 0o400 or (st.st_mode & 0o170000) != 0o100000:
            problems.append(f"file {path}: mode {st.st_mode & 0o7777:o}, not a read-only (0400) file")
            continue
        with open(path, "rb") as f:
            if hashlib.sha256(f.read()).digest() != digest:
                problems.append(f"file {path}: differs from its blob (remove it: it is written "
                                "again from the blob when next used)")
    return problems


def _verify(store, args):
    problems = verify_cache(store)
    if args.json:
        print(json.dumps({"ok": not problems, "problems": problems}, indent=1))
    else:
        for p in problems:
            print(p)
        print(f"{store.path}: " + ("ok" if not problems else f"{len(problems)} problems"))
    return 1 if problems else 0


def gc_cache(store, max_size=None, older_than=None, dry_run=False):
    """Evicts least recently used groups and files: those unused for
    ``older_than`` seconds, then the oldest until the blobs take at most
    ``max_size`` bytes; then blobs nothing uses and their files beside the
    cache, and gives the space back. Returns (entries evicted, bytes freed)."""
    with store.transaction():
        rows = _entries(store)
        sizes = dict(store.db.execute("SELECT sha256, length(data) FROM blobs"))
        refs = {}
        for e in rows:
            for d in set(e["members"].values()):
                refs[d] = refs.get(d, 0) + 1
        total = sum(sizes.values())
        now, evict = time.time(), []
        for e in rows:  # least recently used first
            old = older_than is not None and e["used"] < now - older_than
            big = max_size is not None and total > max_size
            if not (old or big):
                continue
            evict.append(e)
            for d in set(e["members"].values()):
                refs[d] -= 1
                if refs[d] == 0:
                    total -= sizes.get(d, 0)
        dead = [d for d, n in refs.items() if n == 0] + [d for d in sizes if d not in refs]
        freed = sum(sizes.get(d, 0) for d in dead)
        if not dry_run:
            for e in evict:
                table = "groups" if e["kind"] == "group" else "files"
                store.db.execute(f"DELETE FROM {table} WHERE key = ? AND name = ?", (e["key"], e["name"]))
                store.db.execute("DELETE FROM recency WHERE key = ? AND name = ? AND NOT EXISTS "
                                 "(SELECT 1 FROM groups WHERE key = ?1 AND name = ?2) AND NOT EXISTS "
                                 "(SELECT 1 FROM files WHERE key = ?1 AND name = ?2)", (e["key"], e["name"]))
            store.db.executemany("DELETE FROM blobs WHERE sha256 = ?", [(d,) for d in dead])
    if not dry_run:
        gone = {d.hex()[:32] for d in dead}
        for entry in os.listdir(store.files):
            if entry.split(".", 1)[0] in gone:
                try:
                    os.unlink(os.path.join(store.files, entry))
                except FileNotFoundError:
                    pass
        _materialized.clear()
        store.db.execute("VACUUM")
    return len(evict), freed


def _gc(store, args):
    n, freed = gc_cache(store, _size(args.max_size) if args.max_size else None,
                        _age(args.older_than) if args.older_than else None, args.dry_run)
    verb = "would evict" if args.dry_run else "evicted"
    print(json.dumps({"evicted": n, "bytes": freed, "dry_run": args.dry_run}) if args.json
          else f"{verb} {n} entries, {freed} bytes")
    return 0


_BUNDLE_IDENT = "triton-bundle"


def export_cache(store, path, keys=()):
    """Writes a bundle of the entries (all, or those whose Triton key or name
    is in ``keys``): one value as the Redis tier holds them (SHA-256s, signed
    with KILN_SIGNING_KEY). Returns the number of entries."""
    rows = [e for e in _entries(store) if not keys or e["key"] in keys or e["name"] in keys]
    if any(e["missing"] for e in rows):
        raise InvalidArgumentError("the cache has entries with missing blobs: run verify")
    manifest = [dict(kind=e["kind"], key=e["key"], name=e["name"],
                     members={m: d.hex() for m, d in e["members"].items()}) for e in rows]
    members = {"manifest.json": json.dumps(manifest, sort_keys=True).encode()}
    for e in rows:
        for d in e["members"].values():
            members.setdefault(d.hex(), store.db.execute("SELECT data FROM blobs WHERE sha256 = ?",
                                                         (d,)).fetchone()[0])
    _refuse_cache_file(store, path)
    data = encode_value(_BUNDLE_IDENT, members, _signing_key())
    fd, temp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".kiln-export-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(temp, path)
    return len(rows)


def import_cache(store, path):
    """Checks a bundle whole (checksums, every blob against its digest, the
    signature as KILN_SIGNING_KEY and KILN_REQUIRE_SIGNED or the cache's
    setting decide), then writes it in one transaction. Returns the number
    of entries; raises CorruptError, writing nothing, when a check fails."""
    _refuse_cache_file(store, path)
    with open(path, "rb") as f:
        data = f.read()
    try:
        members = decode_value(data, _BUNDLE_IDENT, _signing_key(), _signatures_required(store))
        manifest = json.loads(members["manifest.json"])
        for e in manifest:
            for m, d in e["members"].items():
                if hashlib.sha256(members[d]).hexdigest() != d:
                    raise _Rejected(f"{e['key']}/{m} is damaged")
    except (_Rejected, KeyError, ValueError, TypeError) as e:
        raise CorruptError(f"{path}: not imported: {e}") from None
    with store.transaction():
        for e in manifest:
            store.db.executemany("INSERT OR IGNORE INTO blobs VALUES (?, ?)",
                                 [(bytes.fromhex(d), members[d]) for d in e["members"].values()])
            if e["kind"] == "group":
                store.db.execute("DELETE FROM groups WHERE key = ? AND name = ?", (e["key"], e["name"]))
                store.db.executemany("INSERT INTO groups VALUES (?, ?, ?, ?)",
                                     [(e["key"], e["name"], m, bytes.fromhex(d)) for m, d in e["members"].items()])
            else:
                (d,) = e["members"].values()
                store.db.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?)", (e["key"], e["name"], bytes.fromhex(d)))
    return len(manifest)


def _refuse_cache_file(store, path):
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            own = os.stat(store.path + suffix)
        except FileNotFoundError:
            continue
        if (own.st_dev, own.st_ino) == (st.st_dev, st.st_ino):
            raise InvalidArgumentError(f"'{path}' is the cache itself (or its {suffix or 'file'})")


def _export(store, args):
    n = export_cache(store, args.file, args.keys)
    print(json.dumps({"entries": n, "signed": _signing_key() is not None}) if args.json
          else f"exported {n} entries to {args.file}" + (" (signed)" if _signing_key() else ""))
    return 0


def _import(store, args):
    n = import_cache(store, args.file)
    print(json.dumps({"entries": n}) if args.json else f"imported {n} entries")
    return 0


def _config(store, args):
    if args.value is not None:
        if args.name != "require_signed" or args.value not in ("0", "1"):
            raise InvalidArgumentError("the setting is require_signed, 0 or 1")
        with store.transaction():
            store.db.execute("INSERT OR REPLACE INTO settings VALUES ('require_signed', ?)", (args.value,))
        store.settings.clear()
    required = _signatures_required(store)
    source = ("KILN_REQUIRE_SIGNED" if os.environ.get("KILN_REQUIRE_SIGNED") == "1"
              else "setting" if store.setting("require_signed") is not None else "default")
    print(json.dumps({"require_signed": required, "source": source}) if args.json
          else f"require_signed {int(required)} ({source})")
    return 0


def main(argv=None):
    """``python -m kiln.triton [--cache PATH] COMMAND``: Triton's cache file
    (``kiln.triton:CacheManager``) as kiln-inspect handles Kiln's."""
    import argparse
    parser = argparse.ArgumentParser(prog="python -m kiln.triton",
                                     description="Inspect and manage Kiln's Triton cache file")
    parser.add_argument("--cache", default=None, help="the Triton cache file (default: $KILN_TRITON_CACHE, "
                        "else triton.db beside Kiln's default cache)")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("ls", "verify", "gc", "export", "import", "config"):
        p = sub.add_parser(name)
        p.add_argument("--json", action="store_true")
        if name == "gc":
            p.add_argument("--max-size")
            p.add_argument("--older-than")
            p.add_argument("--dry-run", action="store_true")
        elif name == "export":
            p.add_argument("file")
            p.add_argument("keys", nargs="*", help="Triton keys or group names (default: all)")
        elif name == "import":
            p.add_argument("file")
        elif name == "config":
            p.add_argument("name", nargs="?", default="require_signed")
            p.add_argument("value", nargs="?")
    args = parser.parse_args(argv)
    path = args.cache or triton_cache_path()
    if args.command != "import" and not os.path.exists(path):
        sys.stderr.write(f"kiln.triton: {path}: no such cache file\n")
        return 2
    try:
        store = _store(path)
        return globals()["_" + args.command](store, args)
    except (InvalidArgumentError, UnavailableError, CorruptError, OSError) as e:
        sys.stderr.write(f"kiln.triton {args.command}: {e}\n")
        return 2 if isinstance(e, InvalidArgumentError) else 1


if __name__ == "__main__":
    sys.exit(main())
