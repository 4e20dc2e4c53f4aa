#!/usr/bin/env python3
"""A fleet's first start: several kiln-precompile processes started together
on one cold unit, measured side by side in one run (figures, not a timed
test), each printed beside its target.

    python3 bench/fleet.py --bin DIR [--bin LABEL=DIR ...] [-j 2] [--rounds 3]

DIR holds kiln-precompile and kiln-inspect. Scenarios, every round, every build:
- N = 1, 2, 6 processes on one cold unit and one cache: jobs compiled in all
  (the "compiled" jobs of every process's --json, summed), total CPU of the
  processes and every process they started (codegen workers included), wall
  from the first start to the last exit;
- two caches ("hosts") on one private redis-server, three processes each,
  all six started together: jobs compiled in all;
- a holder killed mid-run: two processes on one cold cache, one of them
  SIGKILLed while it compiles; how long the other (its waiter) takes, against
  the lease (2 s, or --lease-ms) plus one process's own compile time.

A "process" of the fleet is one rank's start-up: kiln-precompile of the host
unit, then kiln-precompile of the sm_90 unit (one unit per triple: the CLI
links its files into one unit of one triple). Every process has a deadline
(--timeout); a process past it is killed and reported as a hang, never waited
on.

CPU: the script makes itself a child subreaper, so that codegen workers that
outlive (or are orphaned by) their kiln-precompile are reparented to it and
reaped here with their rusage; each figure is the sum of every reaped
descendant's user + system time. (kiln-precompile does not wait for its
workers; os.wait4 on it alone misses them.)

Writes bench/fleet_results.json (one entry per build label, merged with the
labels already there) and bench/fleet_results.md (the table of every label
in the JSON); with --results-md also puts that table, between markers, into
bench/results.md.
"""

import argparse
import collections
import ctypes
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import workloads  # noqa: E402

# The unit the issue measured: a 60-function host unit whose roots defer to
# children (here each root is the head of a 18-job deferred tree, from
# workloads.closure_unit) and a 40-kernel sm_90 unit: 1,120 jobs in all.
HOST_ROOTS = 60
HOST_TREE = 18
SM90_KERNELS = 40
LEASE_MS_DEFAULT = 2000

TARGETS = {
    "jobs6": 1.1, "cpu6": 1.3, "wall6": 1.15, "jobs_redis": 1.1,
}


# --- workloads ---------------------------------------------------------------
def host_unit(roots, tree):
    """`roots` copies of workloads.closure_unit(tree), each renamed: root r is
    fleet{r}_n0, and its deferred tree fleet{r}_n1 .. fleet{r}_n{tree-1}."""
    decl = "declare ptr @kiln_deferred(ptr)\n"
    body = workloads.closure_unit(tree).split(decl, 1)[1]
    parts = [f"; fleet host unit: {roots} roots, each the head of a deferred tree "
             f"of {tree} jobs\n", decl]
    for r in range(roots):
        parts.append(body.replace(f"closure{tree}_", f"fleet{r}_"))
    return "\n".join(parts), [f"fleet{r}_n0" for r in range(roots)]


def write_units(work, scale):
    roots = max(1, round(HOST_ROOTS * scale))
    kernels = max(1, round(SM90_KERNELS * scale))
    os.makedirs(work, exist_ok=True)
    text, entries = host_unit(roots, HOST_TREE)
    host = os.path.join(work, "fleet_host.ll")
    with open(host, "w") as f:
        f.write(text)
    sm90 = os.path.join(work, "fleet_sm90.ll")
    with open(sm90, "w") as f:
        f.write(workloads.gpu_kernel_unit("sm_90", kernels))
    # (name, path, entries, extra flags, jobs)
    return [("host", host, entries, [], roots * HOST_TREE),
            ("sm_90", sm90, [f"k{k}" for k in range(kernels)], ["--target", "sm_90"], kernels)]


# --- processes ---------------------------------------------------------------
def set_subreaper():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def proc_table():
    """{pid: (ppid, comm)} of every process now."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        r = s.rfind(")")
        out[int(d)] = (int(s[r + 2:].split()[1]), s[s.find("(") + 1:r])
    return out


def descendants(root, exclude=()):
    t = proc_table()
    kids = collections.defaultdict(list)
    for pid, (ppid, _) in t.items():
        kids[ppid].append(pid)
    out, todo = [], [root]
    while todo:
        for c in kids.get(todo.pop(), []):
            if c not in exclude:
                out.append(c)
                todo.append(c)
    return out, t


def proc_cpu_s(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
        v = s[s.rfind(")") + 2:].split()
        return sum(int(x) for x in v[11:15]) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


class Rank:
    """One process of the fleet: its units' kiln-precompile commands, one
    after another."""

    def __init__(self, name, steps, env, deadline_s):
        self.name = name
        self.steps = list(steps)          # [(unit name, argv)]
        self.env = env
        self.deadline_s = deadline_s
        self.results = []                 # one dict per step run
        self.pid = None
        self.popen = None
        self.out = self.err = None
        self.started = None               # of the rank
        self.step_started = None
        self.ended = None
        self.failed = None                # text, if the rank failed or hung
        self.killed = False

    def start_next(self, now):
        if self.started is None:
            self.started = now
        unit, argv = self.steps.pop(0)
        self.unit = unit
        self.out = tempfile.TemporaryFile()
        self.err = tempfile.TemporaryFile()
        self.popen = subprocess.Popen(argv, stdout=self.out, stderr=self.err, env=self.env)
        self.pid = self.popen.pid
        self.step_started = now

    def finish_step(self, status, cpu_s, now):
        rc = os.waitstatus_to_exitcode(status)
        self.popen.returncode = rc  # reaped here, not by Popen
        self.out.seek(0)
        self.err.seek(0)
        stdout = self.out.read().decode(errors="replace")
        stderr = self.err.read().decode(errors="replace")
        self.out.close()
        self.err.close()
        statuses, keys = collections.Counter(), set()
        try:
            doc = json.loads(stdout)
            for j in doc.get("jobs", []):
                statuses[j.get("status", "?")] += 1
                keys.add(j.get("key"))
        except ValueError:
            doc = None
        res = {"unit": self.unit, "rc": rc, "wall_s": now - self.step_started,
               "cpu_s": cpu_s, "statuses": dict(statuses), "keys": sorted(keys),
               "stderr": stderr.strip()[-400:]}
        self.results.append(res)
        self.pid = None
        if self.killed:
            return False
        if rc != 0 or doc is None:
            self.failed = f"{self.unit}: exit {rc}: {res['stderr'][-200:]}"
            return False
        return bool(self.steps)


class Fleet:
    def __init__(self, exclude_pids):
        self.exclude = exclude_pids       # our own long-lived children (redis-server)
        self.other_exits = {}             # pid -> status of an excluded pid reaped

    def run(self, ranks, timeout_s, kill=None):
        """Starts every rank at once and runs them to the end. kill: (rank,
        seconds after the start): SIGKILL that rank's process then. Returns
        the scenario's figures."""
        me = os.getpid()
        t0 = time.perf_counter()
        for r in ranks:
            r.start_next(t0)
        by_pid = {r.pid: r for r in ranks}
        cpu = orphan_cpu = 0.0
        orphans = 0
        kill_info = None
        hung = []
        while True:
            progressed = False
            while True:
                try:
                    pid, status, ru = os.wait4(-1, os.WNOHANG)
                except ChildProcessError:
                    pid = 0
                if pid == 0:
                    break
                progressed = True
                now = time.perf_counter()
                c = ru.ru_utime + ru.ru_stime
                if pid in self.exclude:
                    self.other_exits[pid] = status
                    continue
                cpu += c
                r = by_pid.pop(pid, None)
                if r is None:
                    orphan_cpu += c
                    orphans += 1
                    continue
                if r.finish_step(status, c, now):
                    r.start_next(now)
                    by_pid[r.pid] = r
                else:
                    r.ended = now
            now = time.perf_counter()
            if kill and kill_info is None and now - t0 >= kill[1]:
                victim = kill[0]
                if victim.pid is not None:
                    kids, t = descendants(victim.pid)
                    victim.killed = True
                    os.kill(victim.pid, signal.SIGKILL)
                    kill_info = {"at_s": now - t0, "unit": victim.unit,
                                 "step_elapsed_s": now - victim.step_started,
                                 "children_alive": [t[k][1] for k in kids]}
                else:
                    kill_info = {"at_s": now - t0, "missed": "the process had already ended"}
            for r in list(by_pid.values()):
                if not r.killed and now - r.started > timeout_s:
                    os.kill(r.pid, signal.SIGKILL)
                    r.killed = True
                    r.failed = f"hung: still running after {timeout_s:.0f} s ({r.unit})"
                    hung.append(r.name)
            if not by_pid:
                break
            if not progressed:
                time.sleep(0.01)
        wall = time.perf_counter() - t0
        # Descendants still alive (workers on their way out, or anything
        # detached): wait a little for them, then kill and count them.
        lingering = []
        end = time.perf_counter() + 10
        while True:
            kids, t = descendants(me, self.exclude)
            try:
                while True:
                    pid, status, ru = os.wait4(-1, os.WNOHANG)
                    if pid == 0:
                        break
                    if pid in self.exclude:
                        self.other_exits[pid] = status
                        continue
                    c = ru.ru_utime + ru.ru_stime
                    cpu += c
                    orphan_cpu += c
                    orphans += 1
            except ChildProcessError:
                pass
            kids, t = descendants(me, self.exclude)
            if not kids:
                break
            if time.perf_counter() > end:
                for k in kids:
                    lingering.append(t[k][1])
                    try:
                        os.kill(k, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                end = time.perf_counter() + 5
            time.sleep(0.02)
        compiled = sum(res["statuses"].get("compiled", 0) for r in ranks for res in r.results)
        statuses = collections.Counter()
        for r in ranks:
            for res in r.results:
                statuses.update(res["statuses"])
        return {"wall_s": wall, "cpu_s": cpu, "orphan_cpu_s": orphan_cpu, "orphans": orphans,
                "compiled": compiled, "statuses": dict(statuses), "hung": hung,
                "lingering": lingering, "kill": kill_info,
                "ranks": [{"name": r.name, "failed": r.failed, "killed": r.killed,
                           "wall_s": (r.ended or t0) - r.started if r.ended else None,
                           "steps": r.results} for r in ranks]}


# --- redis ---------------------------------------------------------------------
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_cmd(port, *args, timeout=2.0):
    msg = f"*{len(args)}\r\n" + "".join(f"${len(str(a))}\r\n{a}\r\n" for a in args)
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(msg.encode())
        return s.recv(4096).decode(errors="replace").strip()


class Redis:
    def __init__(self, work):
        self.server = shutil.which("redis-server")
        self.proc = None
        self.work = work

    def start(self):
        if not self.server:
            return "redis-server is not on PATH"
        for _ in range(5):
            self.port = free_port()
            self.log = open(os.path.join(self.work, "redis.log"), "w")
            self.proc = subprocess.Popen(
                [self.server, "--port", str(self.port), "--bind", "127.0.0.1",
                 "--save", "", "--appendonly", "no", "--dir", self.work],
                stdout=self.log, stderr=subprocess.STDOUT)
            end = time.perf_counter() + 5
            while time.perf_counter() < end and self.proc.poll() is None:
                try:
                    if redis_cmd(self.port, "PING") == "+PONG":
                        return None
                except OSError:
                    time.sleep(0.05)
            self.stop()
        return "redis-server did not start (see redis.log)"

    def flush(self):
        return redis_cmd(self.port, "FLUSHALL")

    def keys(self):
        r = redis_cmd(self.port, "DBSIZE")
        return int(r[1:]) if r.startswith(":") else None

    def stop(self, fleet=None):
        if self.proc:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            except ChildProcessError:
                pass  # reaped by a fleet's reaper
            self.proc = None
            self.log.close()


# --- the benchmark -------------------------------------------------------------
class Bench:
    def __init__(self, args, builds, units, work):
        self.a = args
        self.builds = builds              # [(label, bindir)]
        self.units = units
        self.unit_jobs = sum(u[4] for u in units)
        self.work = work
        self.env = dict(os.environ)
        for k in ("KILN_CACHE", "KILN_REMOTE", "KILN_READ_ONLY", "KILN_MUST_HIT"):
            self.env.pop(k, None)
        self.env["XDG_CACHE_HOME"] = os.path.join(work, "xdg")
        if args.lease_ms:
            self.env["KILN_CLAIM_LEASE_MS"] = str(args.lease_ms)
        self.lease_s = (args.lease_ms or LEASE_MS_DEFAULT) / 1e3
        self.data = {label: collections.defaultdict(list) for label, _ in builds}
        self.redis = Redis(work)
        self.fleet = Fleet(set())
        self.started = time.monotonic()

    def log(self, msg):
        print(f"[{time.monotonic() - self.started:6.1f}s] {msg}", flush=True)

    def tool(self, bindir, name):
        p = os.path.join(bindir, name)
        if not os.access(p, os.X_OK):
            sys.exit(f"fleet: {p} is missing")
        return p

    def steps(self, bindir, cache, remote):
        out = []
        for name, path, entries, extra, _ in self.units:
            argv = [self.tool(bindir, "kiln-precompile"), "--cache", cache, "-q", "--json",
                    "-j", str(self.a.jobs), "--remote", remote or "off", *extra]
            for e in entries:
                argv += ["--entry", e]
            out.append((name, argv + [path]))
        return out

    def fresh_cache(self, tag):
        d = os.path.join(self.work, "caches")
        os.makedirs(d, exist_ok=True)
        db = os.path.join(d, tag + ".db")
        for f in os.listdir(d):
            if f.startswith(tag + ".db"):
                p = os.path.join(d, f)
                shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
        return db

    def check_cache(self, bindir, db):
        """kiln-inspect's count of jobs in the cache, and whether verify passed."""
        p = subprocess.run([self.tool(bindir, "kiln-inspect"), "--cache", db, "stats", "--json"],
                           capture_output=True, text=True, env=self.env, timeout=120)
        try:
            jobs = json.loads(p.stdout)["jobs"]
        except (ValueError, KeyError):
            jobs = None
        v = subprocess.run([self.tool(bindir, "kiln-inspect"), "--cache", db, "verify"],
                           capture_output=True, text=True, env=self.env, timeout=300)
        return {"jobs_in_cache": jobs, "verify_rc": v.returncode,
                "verify": (v.stdout + v.stderr).strip()[-200:]}

    @staticmethod
    def keys_agree(res):
        """Every process that finished reported the same keys for each unit."""
        seen = collections.defaultdict(set)
        for r in res["ranks"]:
            if r["failed"] or r["killed"]:
                continue
            for s in r["steps"]:
                seen[s["unit"]].add(tuple(s["keys"]))
        return all(len(v) == 1 for v in seen.values())

    def scenario(self, label, bindir, name, n, caches=1, remote=None, kill_at=None):
        ranks, dbs = [], []
        for c in range(caches):
            db = self.fresh_cache(f"{label}-{name}-{c}")
            dbs.append(db)
            for i in range(n):
                ranks.append(Rank(f"c{c}p{i}", self.steps(bindir, db, remote), self.env,
                                  self.a.timeout))
        kill = (ranks[0], kill_at) if kill_at is not None else None
        res = self.fleet.run(ranks, self.a.timeout, kill)
        res["caches"] = [self.check_cache(bindir, db) for db in dbs]
        res["keys_agree"] = self.keys_agree(res)
        res["failed"] = [f"{r['name']}: {r['failed']}" for r in res["ranks"] if r["failed"]]
        for r in res["ranks"]:
            for s in r["steps"]:
                s.pop("keys")  # large; agreement is recorded above
        self.data[label][name].append(res)
        cj = ", ".join(str(c["jobs_in_cache"]) for c in res["caches"])
        self.log(f"{label} {name}: compiled {res['compiled']} (unit {self.unit_jobs}), "
                 f"cpu {res['cpu_s']:.1f} s, wall {res['wall_s']:.1f} s, cache jobs {cj}"
                 + (f", FAILED: {res['failed']}" if res["failed"] else ""))
        return res

    def round(self, label, bindir):
        for n in (1, 2, 6):
            self.scenario(label, bindir, f"n{n}", n)
        if self.redis_ok:
            self.redis.flush()
            r = self.scenario(label, bindir, "redis2x3", 3, caches=2,
                              remote=f"redis://127.0.0.1:{self.redis.port}")
            r["redis_keys"] = self.redis.keys()
        # The killed holder: one process's host step alone, this round's.
        solo = self.data[label]["n1"][-1]["ranks"][0]["steps"][0]["wall_s"]
        res = self.scenario(label, bindir, "kill", 2, kill_at=self.a.kill_frac * solo)
        res["solo_host_s"] = solo

    def run(self):
        self.redis_ok = True
        if not self.a.no_redis:
            err = self.redis.start()
            if err:
                self.log(f"redis: {err}; the two-cache scenario is skipped")
                self.redis_ok = False
            else:
                self.fleet.exclude.add(self.redis.proc.pid)
                self.log(f"redis-server on 127.0.0.1:{self.redis.port}")
        else:
            self.redis_ok = False
        try:
            for rnd in range(self.a.rounds):
                for label, bindir in self.builds:
                    self.log(f"round {rnd + 1}/{self.a.rounds}: {label}")
                    self.round(label, bindir)
        finally:
            self.redis.stop()

    # --- figures ---------------------------------------------------------------
    def summary(self, label):
        return summarize(self.data[label], self.unit_jobs, self.a.jobs, self.a.timeout)


def summarize(d, unit_jobs, jobs, timeout):
    """The figures of one build, from its scenarios' raw measurements."""
    d = collections.defaultdict(list, d)
    med = statistics.median

    def col(name, key):
        return [r[key] for r in d.get(name, [])]

    s = {"rounds": len(d.get("n1", [])), "unit_jobs": unit_jobs, "jobs": jobs,
         "timeout_s": timeout}
    for n in (1, 2, 6):
        runs = d.get(f"n{n}", [])
        if not runs:
            continue
        s[f"n{n}"] = {"compiled": med(col(f"n{n}", "compiled")),
                      "cpu_s": med(col(f"n{n}", "cpu_s")),
                      "wall_s": med(col(f"n{n}", "wall_s")),
                      "orphan_cpu_s": med(col(f"n{n}", "orphan_cpu_s")),
                      "failed": sum(bool(r["failed"]) for r in runs),
                      "keys_agree": all(r["keys_agree"] for r in runs),
                      "cache_ok": all(c["jobs_in_cache"] == unit_jobs
                                      and c["verify_rc"] == 0
                                      for r in runs for c in r["caches"])}
    if d.get("redis2x3"):
        runs = d["redis2x3"]
        s["redis2x3"] = {"compiled": med(col("redis2x3", "compiled")),
                         "wall_s": med(col("redis2x3", "wall_s")),
                         "cpu_s": med(col("redis2x3", "cpu_s")),
                         "failed": sum(bool(r["failed"]) for r in runs),
                         "keys_agree": all(r["keys_agree"] for r in runs),
                         "cache_ok": all(c["jobs_in_cache"] == unit_jobs
                                         and c["verify_rc"] == 0
                                         for r in runs for c in r["caches"])}
    if d.get("kill"):
        ks = []
        for r in d["kill"]:
            waiter = r["ranks"][1]
            solo1 = d["n1"][len(ks)]["wall_s"] if len(d["n1"]) > len(ks) else None
            ws = collections.Counter()
            for st in waiter["steps"]:
                ws.update(st["statuses"])
            ks.append({"waiter_wall_s": waiter["wall_s"], "waiter_failed": waiter["failed"],
                       "waiter_statuses": dict(ws),
                       "kill": r["kill"], "solo_wall_s": solo1,
                       "after_kill_s": (waiter["wall_s"] - r["kill"]["at_s"])
                       if waiter["wall_s"] is not None and r["kill"] else None,
                       "hung": r["hung"], "cache_ok": all(
                           c["jobs_in_cache"] == unit_jobs and c["verify_rc"] == 0
                           for c in r["caches"])})
        s["kill"] = ks
    hangs = sum(len(r["hung"]) for runs in d.values() for r in runs)
    s["hangs"] = hangs
    s["lingering"] = sorted({c for runs in d.values() for r in runs for c in r["lingering"]})
    return s


def fmt_s(v):
    return "-" if v is None else f"{v:.2f} s"


def rows_for(label, s, lease_s):
    """The table's rows for one build: (figure, measured, target, met, detail)."""
    rows = []
    u = s["unit_jobs"]

    def ok(*rs):
        """A figure counts only if every run behind it succeeded and left a
        whole, verified cache."""
        return all(r["failed"] == 0 and r["cache_ok"] for r in rs)

    n1, n6 = s.get("n1"), s.get("n6")
    j = s["jobs"]
    for n in (1, 2, 6):
        r = s.get(f"n{n}")
        if not r:
            continue
        rows.append((f"{n} process{'es' if n > 1 else ''}, one cold unit, one cache: jobs "
                     f"compiled in all", f"{r['compiled']:,.0f} ({r['compiled'] / u:.2f}x)",
                     "<= 1.1x the unit's jobs" if n == 6 else "(report)",
                     (r["compiled"] / u <= TARGETS["jobs6"] and ok(r)) if n == 6 else None,
                     f"unit {u:,} jobs; -j{j} each; CPU {r['cpu_s']:.1f} s "
                     f"(workers reaped as orphans {r['orphan_cpu_s']:.1f} s), wall "
                     f"{r['wall_s']:.2f} s; failed runs {r['failed']}; keys agree "
                     f"{'yes' if r['keys_agree'] else 'NO'}; every cache holds the unit and "
                     f"verifies: {'yes' if r['cache_ok'] else 'NO'}"))
    for n in (2, 6):
        r = s.get(f"n{n}")
        if not (r and n1):
            continue
        cr = r["cpu_s"] / n1["cpu_s"] if n1["cpu_s"] else float("inf")
        wr = r["wall_s"] / n1["wall_s"]
        rows.append((f"{n} processes: total CPU (workers included) vs one process's",
                     f"{cr:.2f}x", "<= 1.3x" if n == 6 else "(report)",
                     cr <= TARGETS["cpu6"] and ok(r, n1) if n == 6 else None,
                     f"{r['cpu_s']:.1f} s against {n1['cpu_s']:.1f} s"))
        rows.append((f"{n} processes: wall vs one process's", f"{wr:.2f}x",
                     "<= 1.15x" if n == 6 else "(report)",
                     wr <= TARGETS["wall6"] and ok(r, n1) if n == 6 else None,
                     f"{r['wall_s']:.2f} s against {n1['wall_s']:.2f} s, -j{j} each"))
    r = s.get("redis2x3")
    if r:
        rows.append(("two caches on one redis-server, three processes each: jobs compiled "
                     "in all", f"{r['compiled']:,.0f} ({r['compiled'] / u:.2f}x)",
                     "<= 1.1x the unit's jobs",
                     r["compiled"] / u <= TARGETS["jobs_redis"] and ok(r),
                     f"unit {u:,} jobs; -j{j} each; wall {r['wall_s']:.2f} s, CPU "
                     f"{r['cpu_s']:.1f} s; failed runs {r['failed']}; keys agree "
                     f"{'yes' if r['keys_agree'] else 'NO'}; both caches hold the unit and "
                     f"verify: {'yes' if r['cache_ok'] else 'NO'}"))
    ks = s.get("kill")
    if ks:
        worst, met, details = None, True, []
        for k in ks:
            w, solo = k["waiter_wall_s"], k["solo_wall_s"]
            over = None if w is None or solo is None else w - solo
            ok = over is not None and over <= lease_s and not k["waiter_failed"] and not k["hung"]
            met = met and ok
            if over is not None and (worst is None or over > worst):
                worst = over
            ki = k["kill"] or {}
            details.append(
                f"killed at {ki.get('at_s', 0):.2f} s ({ki.get('unit', '?')}, "
                f"its child processes alive {len(ki.get('children_alive', []))}), waiter "
                f"{fmt_s(w)} against one process's {fmt_s(solo)}, "
                f"{fmt_s(k['after_kill_s'])} after the kill, jobs "
                + " ".join(f"{n} {c}" for n, c in sorted(k.get("waiter_statuses", {}).items()))
                + (f", FAILED: {k['waiter_failed']}" if k["waiter_failed"] else "")
                + ("" if k["cache_ok"] else ", cache incomplete"))
        rows.append(("holder SIGKILLed mid-run: waiter's wall beyond one process's own "
                     "compile (worst round)", fmt_s(worst),
                     f"<= lease {lease_s:g} s", met, "; ".join(details)))
    rows.append(("no run hangs", f"{s['hangs']} hung", "0", s["hangs"] == 0,
                 f"every process has a deadline ({s.get('timeout_s', '?')} s); {s['rounds']} "
                 f"round(s); descendants still alive 10 s after the last exit (killed): "
                 + (", ".join(s.get("lingering") or []) or "none")))
    return rows


def markdown(doc):
    out = ["## Fleet: several processes on one cold unit (`fleet.py`)", ""]
    for label, run in doc["runs"].items():
        s = run["summary"]
        out += [f"### {label}", "",
                f"{run['date']}, {run['machine']}, {run['cpus']} cpus, {s['rounds']} round(s), "
                f"medians; -j{s['jobs']} per process; the unit: {run['unit']}. "
                f"{run['note']}", "",
                "| figure | measured | target | met | detail |", "|---|---|---|---|---|"]
        for fig, val, tgt, met, det in rows_for(label, s, run["lease_s"]):
            m = "-" if met is None else ("yes" if met else "**MISSED**")
            out.append(f"| {fig} | {val} | {tgt} | {m} | {det} |")
        out.append("")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", default=[],
                    help="DIR or LABEL=DIR holding kiln-precompile and kiln-inspect; "
                    "repeat to measure builds side by side (label: the directory's parent's "
                    "name when DIR ends in bin)")
    ap.add_argument("-j", "--jobs", type=int, default=2,
                    help="-j of every kiln-precompile (default 2: this machine's cores, so "
                    "one process alone can use the machine)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of every scenario (default 3)")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="unit size against the issue's (60 host roots of 18 jobs, 40 sm_90 "
                    "kernels); default 1")
    ap.add_argument("--timeout", type=float, default=300,
                    help="seconds a process may run before it is killed as hung (default 300)")
    ap.add_argument("--kill-frac", type=float, default=0.5,
                    help="the holder is killed this fraction of one process's host-unit "
                    "compile after the start (default 0.5)")
    ap.add_argument("--lease-ms", type=int, default=0,
                    help="pass KILN_CLAIM_LEASE_MS to every process and use it as the "
                    "killed-holder target (default: unset; the target is 2000 ms)")
    ap.add_argument("--no-redis", action="store_true", help="skip the two-cache scenario")
    ap.add_argument("--work", default="", help="scratch directory (default: a temporary one)")
    ap.add_argument("--json", default=os.path.join(HERE, "fleet_results.json"))
    ap.add_argument("--md", default=os.path.join(HERE, "fleet_results.md"))
    ap.add_argument("--results-md", action="store_true",
                    help="also put the table into bench/results.md, between markers")
    ap.add_argument("--note", default="", help="a sentence recorded with this run's figures")
    ap.add_argument("--render-only", action="store_true",
                    help="run nothing: write the tables again from the JSON")
    a = ap.parse_args()
    if a.render_only:
        with open(a.json) as f:
            doc = json.load(f)
        for run in doc["runs"].values():
            old = run["summary"]
            run["summary"] = summarize(run["scenarios"], old["unit_jobs"], old["jobs"],
                                       old.get("timeout_s", "?"))
        write_tables(a, doc)
        return

    if not a.bin:
        ap.error("--bin is required")
    builds = []
    for b in a.bin:
        label, _, d = b.rpartition("=")
        d = os.path.abspath(d)
        if not label:
            label = os.path.basename(os.path.dirname(d)) if os.path.basename(d) == "bin" \
                else os.path.basename(d)
        builds.append((label, d))
    if not set_subreaper():
        sys.exit("fleet: cannot become a child subreaper (prctl); workers' CPU would be lost")
    work = a.work or tempfile.mkdtemp(prefix="kiln-fleet-")
    os.makedirs(work, exist_ok=True)
    units = write_units(os.path.join(work, "ir"), a.scale)
    b = Bench(a, builds, units, work)
    unit_text = (f"{units[0][4] // HOST_TREE} host roots of {HOST_TREE} jobs (deferred trees) "
                 f"+ {units[1][4]} sm_90 kernels = {b.unit_jobs:,} jobs")
    b.log(f"unit: {unit_text}; builds: " + ", ".join(f"{l}={d}" for l, d in builds))
    b.run()

    doc = {"runs": {}}
    if os.path.exists(a.json):
        try:
            with open(a.json) as f:
                doc = json.load(f)
        except ValueError:
            pass
    for label, d in builds:
        doc["runs"][label] = {
            "date": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.machine(),
            "cpus": os.cpu_count(), "bin": os.path.basename(os.path.dirname(d)),
            "unit": unit_text, "scale": a.scale, "lease_s": b.lease_s,
            "note": a.note or "Shared machine: figures are noisy.",
            "script_s": round(time.monotonic() - b.started, 1),
            "summary": b.summary(label), "scenarios": b.data[label]}
    with open(a.json, "w") as f:
        json.dump(doc, f, indent=1)
    write_tables(a, doc)
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)


def write_tables(a, doc):
    md = markdown(doc)
    with open(a.md, "w") as f:
        f.write(md + "\n")
    if a.results_md:
        path = os.path.join(HERE, "results.md")
        begin, end = "<!-- fleet.py: begin -->", "<!-- fleet.py: end -->"
        text = open(path).read() if os.path.exists(path) else ""
        block = f"{begin}\n{md}\n{end}"
        if begin in text and end in text:
            text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
        else:
            text = text.rstrip("\n") + "\n\n" + block + "\n"
        with open(path, "w") as f:
            f.write(text)
    print()
    print(md)


if __name__ == "__main__":
    main()
