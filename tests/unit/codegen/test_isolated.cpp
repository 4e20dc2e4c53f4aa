// Unit tests for compiling in a worker process (src/codegen/worker/pool.cpp,
// worker/main.cpp): the same bytes as compile_job in this process; a job
// that makes LLVM's backend abort fails with LLVM's message while this
// process and later jobs carry on; a worker killed mid-job, or while idle,
// is replaced; concurrent callers; the in-process switch; a missing or
// wrong worker executable; and the worker's own protocol and exit at end
// of file.
#include "codegen/worker/pool.h"
#include "codegen/worker/protocol.h"
#include "codegen/device_libs.h"
#include "codegen/ptxas.h"
#include "fixtures/env.hpp"
#include "fixtures/files.hpp"
#include "fixtures/jobs.hpp"
#include "fixtures/process.hpp"
#include "fixtures/worker.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

using namespace kiln;
using namespace kiln::test;

namespace {

const std::string kGood = R"(
define i64 @triple_plus(i64 %x) {
  %t = mul i64 %x, 3
  %r = add i64 %t, 7
  ret i64 %r
}
)";

// sm_80 has no thread-block clusters: NVPTX's instruction selection ends
// the process with "LLVM ERROR: Cannot select: intrinsic
// %llvm.nvvm.read.ptx.sreg.clusterid.x" (llc -mcpu=sm_80 aborts the same way).
const std::string kClusterIdOnSm80 = R"(
declare i32 @llvm.nvvm.read.ptx.sreg.clusterid.x()

define ptx_kernel void @cluster_id(ptr %out) {
  %v = call i32 @llvm.nvvm.read.ptx.sreg.clusterid.x()
  store i32 %v, ptr %out
  ret void
}
)";

// A host job that takes a noticeable time to compile (volatile loads keep
// the optimizer from folding the chain): long enough to be killed mid-job.
std::string slow_ir(int n) {
  std::string ir = "define i64 @slow(ptr %p, i64 %y) {\n";
  std::string prev = "%y";
  for (int i = 0; i < n; ++i) {
    std::string l = "%l" + std::to_string(i), v = "%v" + std::to_string(i);
    ir += "  " + l + " = load volatile i64, ptr %p\n";
    ir += "  " + v + " = mul i64 " + l + ", " + prev + "\n";
    if (i % 7 == 0)
      ir += "  store volatile i64 " + v + ", ptr %p\n";
    prev = v;
  }
  return ir + "  ret i64 " + prev + "\n}\n";
}

std::vector<std::pair<std::string, std::string>>
pairs(const std::vector<codegen::CompiledArtifact>& arts) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const codegen::CompiledArtifact& a : arts)
    out.emplace_back(a.format, a.bytes);
  return out;
}

std::vector<std::pair<std::string, std::string>>
must_isolated(const codegen::JobInput& job, const core::TargetDesc& t,
              const core::CodegenOptions& options = {}) {
  auto r = codegen::compile_job_isolated(job, t, options);
  INFO((r ? std::string() : r.error().message));
  REQUIRE(r);
  return pairs(*r);
}

std::vector<std::pair<std::string, std::string>>
must_in_process(const codegen::JobInput& job, const core::TargetDesc& t,
                const core::CodegenOptions& options = {}) {
  auto r = codegen::compile_job(job, t, options);
  INFO((r ? std::string() : r.error().message));
  REQUIRE(r);
  return pairs(*r);
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

bool has_pid(const std::vector<int>& pids, int pid) {
  return std::find(pids.begin(), pids.end(), pid) != pids.end();
}

// Whether `pid` is a zombie or gone (what a killed, not yet collected
// child of this process looks like).
bool dead(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat)
    return true;
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() || text[paren + 2] == 'Z' ||
         text[paren + 2] == 'X';
}

// This process's open descriptors.
size_t open_fds() {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)e;
    ++n;
  }
  return n;
}

// Children of this process that died and were never collected.
std::vector<int> zombie_children() {
  std::vector<int> out;
  std::string self = std::to_string(::getpid());
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    std::ifstream stat(e.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    size_t paren = text.rfind(')');
    if (paren == std::string::npos || paren + 4 >= text.size())
      continue;
    // ") S PPID ..."
    std::string rest = text.substr(paren + 2);
    char state = rest[0];
    std::string ppid = rest.substr(2, rest.find(' ', 2) - 2);
    if (state == 'Z' && ppid == self)
      out.push_back(std::stoi(name));
  }
  return out;
}

void wait_dead(int pid) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!dead(pid) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(dead(pid));
}

} // namespace

TEST_CASE("compile_job_isolated: a worker gives the bytes compile_job gives, for every kind of "
          "target") {
  core::CodegenOptions o2, o0g;
  o0g.opt_level = 0;
  o0g.debug = true;
  for (const char* spec : {"host", "sm_90", "gfx942"}) {
    core::TargetDesc t = resolved(spec);
    for (const core::CodegenOptions& opts : {o2, o0g}) {
      codegen::JobInput job = job_for(kGood, "triple_plus", t, opts);
      INFO(spec << " " << opts.canonical());
      auto isolated = must_isolated(job, t, opts);
      auto local = must_in_process(job, t, opts);
      CHECK(isolated == local);
      std::vector<std::string> formats;
      for (const auto& [format, bytes] : isolated)
        formats.push_back(format);
      std::vector<std::string> want = codegen::artifact_formats(t);
      std::sort(formats.begin(), formats.end());
      std::sort(want.begin(), want.end());
      CHECK(formats == want);
    }
  }
  CHECK(codegen::worker_pool_stats().busy_pids.empty());
}

TEST_CASE("compile_job_isolated: a job whose compile ends the worker fails with LLVM's message; "
          "the next job gets a new worker") {
  core::TargetDesc sm80 = resolved("sm_80");
  codegen::JobInput bad = job_for(kClusterIdOnSm80, "cluster_id", sm80, {});
  uint64_t lost = codegen::worker_pool_stats().lost;

  auto r = codegen::compile_job_isolated(bad, sm80, {});
  REQUIRE_FALSE(r);
  const Error& e = r.error();
  INFO(e.message);
  CHECK(e.code == Code::internal);
  CHECK(e.entry == "cluster_id");
  CHECK(e.target == "sm_80");
  CHECK(contains(e.message, "job 'cluster_id' (sm_80): code generation crashed"));
  CHECK(contains(e.message, "LLVM ERROR: Cannot select: intrinsic "
                            "%llvm.nvvm.read.ptx.sreg.clusterid.x"));
  CHECK(contains(e.message, "(SIGABRT)"));
  // The pass it died in is kept; the raw stack frames and banner are not.
  CHECK_FALSE(contains(e.message, "PLEASE submit"));
  CHECK_FALSE(contains(e.message, " 0x"));
  CHECK(contains(e.message, "Running pass 'NVPTX DAG->DAG Pattern Instruction Selection'"));

  codegen::WorkerPoolStats after = codegen::worker_pool_stats();
  CHECK(after.lost == lost + 1);
  CHECK(after.busy_pids.empty());

  core::TargetDesc host = resolved("host");
  codegen::JobInput good = job_for(kGood, "triple_plus", host, {});
  CHECK(must_isolated(good, host) == must_in_process(good, host));
  core::TargetDesc sm90 = resolved("sm_90");
  codegen::JobInput good_nv = job_for(kGood, "triple_plus", sm90, {});
  CHECK(must_isolated(good_nv, sm90) == must_in_process(good_nv, sm90));
}

TEST_CASE("compile_job_isolated: a worker killed mid-job fails that job, naming the signal, and "
          "is replaced") {
  core::TargetDesc host = resolved("host");
  codegen::JobInput slow = job_for(slow_ir(5000), "slow", host, {});
  uint64_t lost = codegen::worker_pool_stats().lost;
  std::optional<Result<std::vector<codegen::CompiledArtifact>>> result;
  int killed = -1;
  // The job may, rarely, finish before the kill lands: then try again.
  for (int attempt = 0; attempt < 5 && !(result && !*result); ++attempt) {
    result.reset();
    std::thread t([&] { result = codegen::compile_job_isolated(slow, host, {}); });
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::vector<int> busy;
    while ((busy = codegen::worker_pool_stats().busy_pids).empty() &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(busy.size() == 1);
    killed = busy.front();
    std::this_thread::sleep_for(std::chrono::milliseconds(50)); // well inside the job
    ::kill(killed, SIGKILL);
    t.join();
    REQUIRE(result);
  }
  REQUIRE_FALSE(*result);
  const Error& e = result->error();
  INFO(e.message);
  CHECK(e.code == Code::internal);
  CHECK((e.entry == "slow" && e.target == "host"));
  CHECK(contains(e.message, "job 'slow' (host): code generation crashed: its worker process (pid " +
                                std::to_string(killed) + ") was killed by signal 9 (SIGKILL)"));
  codegen::WorkerPoolStats s = codegen::worker_pool_stats();
  CHECK(s.lost >= lost + 1);
  CHECK_FALSE(has_pid(s.idle_pids, killed));
  CHECK(::kill(killed, 0) != 0); // collected: no zombie left

  codegen::JobInput good = job_for(kGood, "triple_plus", host, {});
  CHECK(must_isolated(good, host) == must_in_process(good, host));
}

TEST_CASE("compile_job_isolated: idle workers that died are replaced without failing a job") {
  core::TargetDesc host = resolved("host");
  codegen::JobInput good = job_for(kGood, "triple_plus", host, {});
  must_isolated(good, host);
  codegen::WorkerPoolStats before = codegen::worker_pool_stats();
  REQUIRE_FALSE(before.idle_pids.empty());
  for (int pid : before.idle_pids) {
    ::kill(pid, SIGKILL);
    wait_dead(pid);
  }
  CHECK(must_isolated(good, host) == must_in_process(good, host));
  codegen::WorkerPoolStats after = codegen::worker_pool_stats();
  CHECK(after.lost == before.lost + before.idle_pids.size());
  CHECK(after.started == before.started + 1);
  for (int pid : before.idle_pids) {
    CHECK_FALSE(has_pid(after.idle_pids, pid));
    CHECK(::kill(pid, 0) != 0);
  }
}

TEST_CASE("compile_job_isolated: four threads at once, crashes among them, never more workers "
          "than callers") {
  codegen::stop_idle_workers();
  core::TargetDesc host = resolved("host"), sm90 = resolved("sm_90"), sm80 = resolved("sm_80");
  core::CodegenOptions o1;
  o1.opt_level = 1;
  codegen::JobInput good_host = job_for(kGood, "triple_plus", host, o1);
  codegen::JobInput good_nv = job_for(kGood, "triple_plus", sm90, o1);
  codegen::JobInput bad = job_for(kClusterIdOnSm80, "cluster_id", sm80, o1);
  auto want_host = must_in_process(good_host, host, o1);
  auto want_nv = must_in_process(good_nv, sm90, o1);

  std::atomic<int> wrong{0}, crashed{0}, max_workers{0};
  auto work = [&](int i) {
    for (int round = 0; round < 6; ++round) {
      int kind = (i + round) % 3;
      if (kind == 2 && round % 2 == 1) { // a crash now and then
        auto r = codegen::compile_job_isolated(bad, sm80, o1);
        if (!r && r.error().entry == "cluster_id" && contains(r.error().message, "Cannot select"))
          ++crashed;
        else
          ++wrong;
      } else {
        const codegen::JobInput& job = kind == 0 ? good_nv : good_host;
        const core::TargetDesc& t = kind == 0 ? sm90 : host;
        auto r = codegen::compile_job_isolated(job, t, o1);
        if (!r || pairs(*r) != (kind == 0 ? want_nv : want_host))
          ++wrong;
      }
      codegen::WorkerPoolStats s = codegen::worker_pool_stats();
      int n = int(s.idle_pids.size() + s.busy_pids.size());
      for (int m = max_workers.load(); n > m && !max_workers.compare_exchange_weak(m, n);) {
      }
    }
  };
  size_t fds = open_fds();
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back(work, i);
  for (std::thread& t : threads)
    t.join();
  CHECK(wrong == 0);
  CHECK(crashed > 0);
  CHECK(max_workers <= 4);
  codegen::WorkerPoolStats s = codegen::worker_pool_stats();
  CHECK(s.busy_pids.empty());
  CHECK(s.idle_pids.size() <= 4);
  // Nothing leaks: no descriptor once the workers are stopped, no zombie.
  codegen::stop_idle_workers();
  CHECK(open_fds() == fds);
  CHECK(zombie_children().empty());
}

TEST_CASE("compile_job_isolated: a worker that dies while the request is being sent fails the "
          "job; no SIGPIPE reaches this process") {
  struct sigaction pipe_action {};
  REQUIRE(::sigaction(SIGPIPE, nullptr, &pipe_action) == 0);
  bool pipe_default = pipe_action.sa_handler == SIG_DFL;
  REQUIRE(pipe_default); // a SIGPIPE would end this process
  codegen::stop_idle_workers();
  core::TargetDesc host = resolved("host");
  must_isolated(job_for(kGood, "triple_plus", host, {}), host);
  std::vector<int> idle = codegen::worker_pool_stats().idle_pids;
  REQUIRE(idle.size() == 1);
  // A stopped worker reads nothing: the 32 MiB request fills the socket.
  ::kill(idle.front(), SIGSTOP);
  codegen::JobInput big{"big", "big_symbol", std::string(32 << 20, 'x'), {}};
  std::optional<Result<std::vector<codegen::CompiledArtifact>>> result;
  std::thread t([&] { result = codegen::compile_job_isolated(big, host, {}); });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (codegen::worker_pool_stats().busy_pids.empty() &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(100)); // the socket is full by now
  ::kill(idle.front(), SIGKILL);
  t.join();
  REQUIRE(result);
  REQUIRE_FALSE(*result);
  INFO(result->error().message);
  CHECK(result->error().code == Code::internal);
  CHECK(contains(result->error().message, "job 'big' (host): code generation crashed: its worker "
                                          "process (pid " + std::to_string(idle.front()) +
                                          ") was killed by signal 9 (SIGKILL)"));
  CHECK(zombie_children().empty());
}

TEST_CASE("compile_job_isolated: KILN_CODEGEN_ISOLATION=0 compiles in this process") {
  codegen::stop_idle_workers();
  core::TargetDesc host = resolved("host");
  codegen::JobInput good = job_for(kGood, "triple_plus", host, {});
  uint64_t started = codegen::worker_pool_stats().started;
  {
    EnvVar off("KILN_CODEGEN_ISOLATION", "0");
    CHECK_FALSE(codegen::codegen_isolation_enabled());
    CHECK(must_isolated(good, host) == must_in_process(good, host));
    // Workers are not even looked for.
    EnvVar nowhere("KILN_CODEGEN_WORKER", "/nonexistent/kiln-codegen-worker");
    must_isolated(good, host);
  }
  codegen::WorkerPoolStats s = codegen::worker_pool_stats();
  CHECK(s.started == started);
  CHECK(s.idle_pids.empty());
  for (const char* off : {"off", "false", "no", "OFF"}) {
    EnvVar v("KILN_CODEGEN_ISOLATION", off);
    CHECK_FALSE(codegen::codegen_isolation_enabled());
    CHECK_FALSE(codegen::bitcode_isolation_enabled());
  }
  for (const char* on : {"1", "on", ""}) {
    EnvVar v("KILN_CODEGEN_ISOLATION", on);
    CHECK(codegen::codegen_isolation_enabled());
    CHECK(codegen::bitcode_isolation_enabled());
  }
  // kiln-precompile's default: code generation here, bitcode read in a
  // worker first; nothing is started ahead for code generation.
  for (const char* bitcode : {"bitcode", "Bitcode"}) {
    EnvVar v("KILN_CODEGEN_ISOLATION", bitcode);
    CHECK_FALSE(codegen::codegen_isolation_enabled());
    CHECK(codegen::bitcode_isolation_enabled());
  }
}

TEST_CASE("compile_job_isolated: no worker executable, or one that is no worker, is unavailable "
          "and names it") {
  codegen::stop_idle_workers();
  core::TargetDesc host = resolved("host");
  codegen::JobInput good = job_for(kGood, "triple_plus", host, {});
  {
    EnvVar nowhere("KILN_CODEGEN_WORKER", "/nonexistent/kiln-codegen-worker");
    auto r = codegen::compile_job_isolated(good, host, {});
    REQUIRE_FALSE(r);
    INFO(r.error().message);
    CHECK(r.error().code == Code::unavailable);
    CHECK((r.error().entry == "triple_plus" && r.error().target == "host"));
    CHECK(contains(r.error().message, "job 'triple_plus' (host): no code generation worker at "
                                      "'/nonexistent/kiln-codegen-worker' ($KILN_CODEGEN_WORKER)"));
  }
  {
    EnvVar other("KILN_CODEGEN_WORKER", "/bin/true");
    auto r = codegen::compile_job_isolated(good, host, {});
    REQUIRE_FALSE(r);
    INFO(r.error().message);
    CHECK(r.error().code == Code::unavailable);
    CHECK(contains(r.error().message,
                   "the code generation worker '/bin/true' did not start: it exited with status 0"));
  }
  CHECK(codegen::worker_pool_stats().idle_pids.empty());
  // The default is found beside the library, as built.
  auto path = codegen::codegen_worker_path();
  REQUIRE(path);
  CHECK(contains(*path, "/kiln-codegen-worker"));
  CHECK(::access(path->c_str(), X_OK) == 0);
  CHECK(must_isolated(good, host) == must_in_process(good, host));
}

TEST_CASE("kiln-codegen-worker: says hello, answers a malformed request with an error, and exits "
          "at end of file") {
  RawWorker w = start_raw_worker();
  std::string hello, reply;
  REQUIRE(codegen::worker::read_message(w.socket, &hello));
  CHECK(codegen::worker::check_hello(hello, w.path));
  REQUIRE(codegen::worker::write_message(w.socket, "not a request"));
  REQUIRE(codegen::worker::read_message(w.socket, &reply));
  std::string why;
  auto r = codegen::worker::decode_response(reply, &why);
  REQUIRE(r);
  REQUIRE_FALSE(*r);
  CHECK(r->error().code == Code::internal);
  CHECK(contains(r->error().message, "malformed code generation request"));

  int status = w.finish();
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("compile_job_isolated: a worker uses the toolchain this process resolved, whatever the "
          "environment says later") {
  core::TargetDesc sm90 = resolved("sm_90");
  std::vector<std::string> want = codegen::artifact_formats(sm90); // resolves ptxas here
  std::sort(want.begin(), want.end());
  codegen::JobInput job = job_for(kGood, "triple_plus", sm90, {});
  codegen::stop_idle_workers();
  // A new worker starts with this environment, yet must not lose the cubin
  // the job's formats promise (or gain one they do not).
  EnvVar no_ptxas("KILN_PTXAS", want.size() == 2 ? "" : "/bin/false");
  auto got = must_isolated(job, sm90);
  std::vector<std::string> formats;
  for (const auto& [format, bytes] : got)
    formats.push_back(format);
  std::sort(formats.begin(), formats.end());
  CHECK(formats == want);
  CHECK(got == must_in_process(job, sm90));
  codegen::stop_idle_workers();
}

namespace {

// The pool's idle workers (those started ahead among them), once no start
// is still on its way: waits up to a minute for `n` of them.
std::vector<int> wait_idle(size_t n) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::vector<int> idle;
  while ((idle = codegen::worker_pool_stats().idle_pids).size() < n &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return idle;
}

} // namespace

TEST_CASE("compile_job_isolated: a worker started ahead takes the next job; one that died before "
          "it is replaced") {
  codegen::stop_idle_workers();
  core::TargetDesc host = resolved("host");
  codegen::JobInput good = job_for(kGood, "triple_plus", host, {});
  uint64_t started = codegen::worker_pool_stats().started;
  codegen::prestart_workers(1);
  std::vector<int> ahead = wait_idle(1);
  REQUIRE(ahead.size() == 1);
  CHECK(codegen::worker_pool_stats().started == started + 1);
  // Asking again, or for as many as there are, starts nothing more.
  codegen::prestart_workers(1);
  CHECK(wait_idle(1).size() == 1);
  // The job runs in it: no other worker is started.
  CHECK(must_isolated(good, host) == must_in_process(good, host));
  codegen::WorkerPoolStats s = codegen::worker_pool_stats();
  CHECK(s.started == started + 1);
  CHECK(s.idle_pids == ahead);

  // One started ahead that dies before its job: the job still runs, in a
  // new worker, and the dead one is counted lost and collected.
  codegen::stop_idle_workers();
  codegen::prestart_workers(1);
  ahead = wait_idle(1);
  REQUIRE(ahead.size() == 1);
  ::kill(ahead[0], SIGKILL);
  wait_dead(ahead[0]);
  uint64_t lost = codegen::worker_pool_stats().lost;
  CHECK(must_isolated(good, host) == must_in_process(good, host));
  s = codegen::worker_pool_stats();
  CHECK(s.lost == lost + 1);
  REQUIRE(s.idle_pids.size() == 1);
  CHECK(s.idle_pids[0] != ahead[0]);
  codegen::stop_idle_workers();
  CHECK(zombie_children().empty());

  // Without isolation nothing is started ahead.
  {
    EnvVar off("KILN_CODEGEN_ISOLATION", "0");
    codegen::prestart_workers(2);
  }
  CHECK(codegen::worker_pool_stats().idle_pids.empty());
}

TEST_CASE("compile_job_isolated: a worker given another toolchain is replaced, not reused") {
  core::TargetDesc nv;
  nv.kind = core::TargetKind::nvptx;
  std::string libdevice;
  for (const std::string& f : codegen::toolchain_files(nv))
    if (f.size() > 3 && f.compare(f.size() - 3, 3, ".bc") == 0)
      libdevice = f;
  if (libdevice.empty()) {
    MESSAGE("skipped: no libdevice to name another copy of");
    return;
  }
  codegen::stop_idle_workers();
  core::TargetDesc host = resolved("host");
  codegen::JobInput good = job_for(kGood, "triple_plus", host, {});
  must_isolated(good, host);
  std::vector<int> first = codegen::worker_pool_stats().idle_pids;
  REQUIRE(first.size() == 1);
  uint64_t lost = codegen::worker_pool_stats().lost;
  // The same library under another path: this process now resolves another
  // toolchain, which a worker takes only at its first job.
  TempDir dir = temp_dir("kiln-isolated-toolchain");
  std::string copy = dir.path() + "/libdevice.10.bc";
  std::filesystem::copy_file(libdevice, copy);
  {
    EnvVar other("KILN_LIBDEVICE", copy.c_str());
    CHECK(must_isolated(good, host) == must_in_process(good, host));
    codegen::WorkerPoolStats s = codegen::worker_pool_stats();
    CHECK(s.lost == lost + 1);
    REQUIRE(s.idle_pids.size() == 1);
    CHECK(s.idle_pids[0] != first[0]);
  }
  codegen::stop_idle_workers();
  CHECK(zombie_children().empty());
}

// A host or AMD compile never resolves NVIDIA's toolchain (that loads
// nvJitLink): a worker told only the others takes NVIDIA's with its first
// NVIDIA job, and is kept. Run in a fresh process, where nothing has
// resolved NVIDIA's toolchain yet.
TEST_CASE("compile_job_isolated: a worker takes NVIDIA's toolchain when the first NVIDIA job "
          "comes after a host job and is kept") {
  if (child_role() != "unresolved-nvidia") {
    check_child(run_child("compile_job_isolated: a worker takes NVIDIA's toolchain when the first "
                          "NVIDIA job comes after a host job and is kept",
                          "unresolved-nvidia", {}));
    return;
  }
  child_ran();
  core::TargetDesc host = resolved("host");
  codegen::JobInput on_host = job_for(kGood, "triple_plus", host, {});
  must_isolated(on_host, host);
  CHECK_FALSE(codegen::ptx_assembler_resolved()); // nor nvJitLink loaded for it
  codegen::WorkerPoolStats before = codegen::worker_pool_stats();
  REQUIRE(before.idle_pids.size() == 1);
  core::TargetDesc sm90 = resolved("sm_90");
  std::vector<std::string> formats = codegen::artifact_formats(sm90); // resolves it here
  CHECK(codegen::ptx_assembler_resolved());
  codegen::JobInput on_nv = job_for(kGood, "triple_plus", sm90, {});
  auto got = must_isolated(on_nv, sm90);
  CHECK(got == must_in_process(on_nv, sm90));
  CHECK(got.size() == formats.size());
  codegen::WorkerPoolStats after = codegen::worker_pool_stats();
  CHECK(after.started == before.started);
  CHECK(after.lost == before.lost);
  CHECK(after.idle_pids == before.idle_pids);
  codegen::stop_idle_workers();
}

TEST_CASE("kiln-codegen-worker: a worker's toolchain grows only by NVIDIA's settings, all at once") {
  using codegen::worker::toolchain_extends;
  codegen::worker::Toolchain rocm = {{"KILN_ROCM_DEVICE_LIBS", "/opt/rocm/amdgcn/bitcode"}};
  codegen::worker::Toolchain with_nv = rocm;
  with_nv.push_back({"KILN_PTXAS", "nvjitlink"});
  with_nv.push_back({"KILN_NVJITLINK", "/usr/local/cuda/lib64/libnvJitLink.so.13"});
  CHECK(toolchain_extends(rocm, rocm));
  CHECK(toolchain_extends({}, {}));
  CHECK(toolchain_extends(rocm, with_nv));
  CHECK(toolchain_extends({}, {{"KILN_PTXAS", "nvjitlink"}}));
  // Anything else is another toolchain: the worker is replaced.
  CHECK_FALSE(toolchain_extends(with_nv, rocm));
  CHECK_FALSE(toolchain_extends({}, rocm));
  CHECK_FALSE(toolchain_extends(rocm, {{"KILN_ROCM_DEVICE_LIBS", "/elsewhere"}}));
  codegen::worker::Toolchain more_nv = with_nv;
  more_nv.push_back({"KILN_CUDADEVRT", "/usr/local/cuda/lib64/libcudadevrt.a"});
  CHECK_FALSE(toolchain_extends(with_nv, more_nv));
  codegen::worker::Toolchain other_nv = rocm;
  other_nv.push_back({"KILN_PTXAS", "/usr/local/cuda/bin/ptxas"});
  CHECK_FALSE(toolchain_extends(with_nv, other_nv));
}
