// Compiling in a worker process (codegen/worker/pool.h): the process-wide pool
// of kiln-codegen-worker processes, how one is started, and the exchange of
// one job with it over a socket.
//
// Why a process: report_fatal_error and a crash in a backend pass cannot be
// recovered in this process safely. LLVM's CrashRecoveryContext needs
// process-wide signal handlers that clash with those of Python or Julia and
// leaves LLVM's state corrupt; fork without exec is unsafe in a
// multithreaded host. A worker is a fresh executable (posix_spawn) that
// initialises LLVM once and compiles many jobs.
#include "codegen/worker/pool.h"

#include "codegen/device_libs.h"
#include "codegen/ptxas.h"
#include "codegen/worker/protocol.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

// Where the worker is, relative to libkiln-compiler's directory, once
// installed and in the build tree (set by src/CMakeLists.txt).
#ifndef KILN_WORKER_INSTALL_DIR_REL
#define KILN_WORKER_INSTALL_DIR_REL "../libexec/kiln"
#endif
#ifndef KILN_WORKER_BUILD_DIR_REL
#define KILN_WORKER_BUILD_DIR_REL "../bin"
#endif

namespace kiln::codegen {

namespace {

using Clock = std::chrono::steady_clock;

// The end of what a worker printed that an error keeps: LLVM's message and
// the passes it was in.
constexpr size_t kStderrTail = 4096;
// How long a starting worker has to say hello.
constexpr auto kStartTimeout = std::chrono::seconds(60);
// How long a dying worker has to finish printing, and to exit.
constexpr auto kDrainTimeout = std::chrono::seconds(2);
constexpr auto kExitTimeout = std::chrono::seconds(5);

struct Worker {
  pid_t pid = -1;
  int chan = -1; ///< this side of its socket, non-blocking
  int err = -1;  ///< read end of its stdout and stderr, non-blocking; -1 at end of file
  std::string path;
  std::string err_tail; ///< what it printed during the current job (the end of it)
  std::optional<worker::Toolchain> toolchain; ///< what its first request gave it

  Worker() = default;
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker() {
    close_chan();
    close_err();
  }
  void close_chan() {
    if (chan >= 0)
      ::close(chan);
    chan = -1;
  }
  void close_err() {
    if (err >= 0)
      ::close(err);
    err = -1;
  }
};

// Reads what the worker printed, keeping the end of it; closes the pipe at
// end of file.
void read_stderr(Worker& w) {
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(w.err, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return;
    if (n <= 0) {
      w.close_err();
      return;
    }
    w.err_tail.append(buf, size_t(n));
    if (w.err_tail.size() > 4 * kStderrTail)
      w.err_tail.erase(0, w.err_tail.size() - 2 * kStderrTail);
  }
}

// Reads what a dying worker still prints, until end of file or `deadline`.
void drain_stderr(Worker& w, Clock::time_point deadline) {
  while (w.err >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0)
      return;
    pollfd p{w.err, POLLIN, 0};
    int n = ::poll(&p, 1, int(left.count()));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return;
    read_stderr(w);
  }
}

// How a wait status ended a process, for messages.
std::string ending(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* abbrev = ::sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) +
           (abbrev ? std::string(" (SIG") + abbrev + ")" : std::string());
  }
  if (WIFEXITED(status))
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended";
}

// Collects the worker's exit status: a worker whose socket is closed exits
// by itself (or is dying already); one that has not after `grace` is
// killed. Only a child not yet collected is signalled, so the pid cannot
// have been reused. Says how it ended.
std::string reap(Worker& w, std::chrono::milliseconds grace) {
  w.close_chan();
  if (w.pid <= 0)
    return "ended";
  pid_t pid = w.pid;
  w.pid = -1;
  bool killed = false;
  auto deadline = Clock::now() + grace;
  auto pause = std::chrono::microseconds(200);
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r < 0 && errno == EINTR)
      continue;
    if (r == pid)
      return ending(status);
    if (r < 0) // collected elsewhere (a host that reaps every child)
      return "ended (its exit status was collected elsewhere)";
    if (Clock::now() >= deadline) {
      if (killed)
        return "did not exit when killed";
      ::kill(pid, SIGKILL);
      killed = true;
      deadline = Clock::now() + kExitTimeout;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20000));
  }
}

// What a dead worker printed, without the crash handler's banner and the
// raw stack frames: LLVM's error and the passes it was running.
std::string what_it_said(const std::string& tail) {
  std::string out;
  size_t start = 0;
  while (start < tail.size()) {
    size_t end = tail.find('\n', start);
    if (end == std::string::npos)
      end = tail.size();
    std::string line = tail.substr(start, end - start);
    start = end + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
      line.pop_back();
    size_t text = line.find_first_not_of(" \t");
    if (text == std::string::npos)
      continue;
    // A frame: "#3 0x..." (symbolized) or "3  libLLVM.so.22.1 0x..."; the
    // pass stack's lines are "1.\tRunning pass ...".
    size_t digits = text + (line[text] == '#' ? 1 : 0), after = digits;
    while (after < line.size() && std::isdigit(static_cast<unsigned char>(line[after])))
      ++after;
    bool frame = after > digits && after < line.size() && line[after] == ' ' &&
                 line.find(" 0x", after) != std::string::npos;
    if (frame || line.rfind("PLEASE submit a bug report", text) == text ||
        line.rfind("Stack dump", text) == text || line.find("Program arguments:") != std::string::npos)
      continue;
    out += (out.empty() ? "" : "\n") + line;
  }
  if (out.size() > kStderrTail) {
    size_t cut = out.find('\n', out.size() - kStderrTail);
    out = "..." + out.substr(cut == std::string::npos ? out.size() - kStderrTail : cut);
  }
  return out;
}

enum class Io { ok, closed, timed_out, bad_frame };

// "0.5 s", "60 s": a limit, for messages.
std::string seconds_text(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", double(ms.count()) / 1000);
  return buf;
}

// How a worker taken out of the pool ended, and what it printed.
struct Ending {
  std::string how;
  std::string said;
};

// Sends `request` (when given) and receives one message into `*reply`,
// reading the worker's stderr meanwhile so that it never blocks on a full
// pipe. `closed`: the socket reached end of file or failed (the worker is
// dead or dying).
Io transfer(Worker& w, const std::string* request, std::string* reply,
            std::optional<Clock::time_point> deadline) {
  std::string header = request ? worker::frame_header(request->size()) : std::string();
  size_t total = request ? header.size() + request->size() : 0, sent = 0;
  char in_header[8];
  size_t header_got = 0, body_got = 0;
  uint64_t body_size = 0;
  char buf[1 << 16];
  for (;;) {
    pollfd fds[2] = {{w.chan, short(POLLIN | (sent < total ? POLLOUT : 0)), 0},
                     {w.err, POLLIN, 0}};
    int timeout = -1;
    if (deadline) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now()).count();
      if (left <= 0)
        return Io::timed_out;
      timeout = int(std::min<long long>(left, INT_MAX));
    }
    int n = ::poll(fds, w.err >= 0 ? 2 : 1, timeout);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return Io::closed;
    if (n == 0)
      continue; // the deadline is checked above
    if (w.err >= 0 && fds[1].revents)
      read_stderr(w);
    if (fds[0].revents & POLLOUT) {
      const char* p = sent < header.size() ? header.data() + sent
                                           : request->data() + (sent - header.size());
      size_t len = sent < header.size() ? header.size() - sent : total - sent;
      ssize_t k = ::send(w.chan, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (k > 0)
        sent += size_t(k);
      else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        return Io::closed;
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      for (;;) {
        char* dst;
        size_t room;
        if (header_got < sizeof in_header) {
          dst = in_header + header_got;
          room = sizeof in_header - header_got;
        } else if (body_got < body_size) {
          dst = reply->data() + body_got;
          room = size_t(body_size - body_got);
        } else {
          dst = buf; // bytes after a whole message: read to tell the error
          room = sizeof buf;
        }
        ssize_t k = ::recv(w.chan, dst, room, MSG_DONTWAIT);
        if (k < 0 && errno == EINTR)
          continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
          break;
        if (k <= 0)
          return Io::closed;
        if (dst == buf)
          return Io::bad_frame;
        if (header_got < sizeof in_header) {
          header_got += size_t(k);
          if (header_got == sizeof in_header) {
            body_size = worker::frame_length(in_header);
            if (body_size > worker::kMaxMessage)
              return Io::bad_frame;
            reply->assign(size_t(body_size), '\0');
          }
        } else {
          body_got += size_t(k);
        }
        if (header_got == sizeof in_header && body_got == body_size)
          return sent < total ? Io::bad_frame : Io::ok; // a reply before the whole request
      }
    }
  }
}

// The toolchain this process resolved (ptxas, the device libraries), named
// explicitly for the worker, so that it produces exactly the artifacts and
// links exactly the libraries the job's key was computed for, even if the
// environment changed since. Sent with each request (worker/protocol.h).
worker::Toolchain toolchain_settings() {
  worker::Toolchain set;
  TargetDesc amd;
  amd.kind = TargetKind::amdgpu;
  if (std::vector<std::string> files = toolchain_files(amd); !files.empty())
    set.emplace_back("KILN_ROCM_DEVICE_LIBS", files.front().substr(0, files.front().rfind('/')));
  // NVIDIA's, once this process has resolved them (an NVIDIA job's key
  // does): resolving them loads nvJitLink, some 25 ms of CPU that a host or
  // AMD precompile does not pay. A worker adopts them when they first come
  // (worker::toolchain_extends).
  if (!ptx_assembler_resolved())
    return set;
  // The assembler too, unless it is the in-process library (no KILN_PTXAS).
  if (ptx_assembler() == PtxAssembler::link)
    set.emplace_back("KILN_PTXAS", kAssembleAtLink);
  else if (ptx_assembler() != PtxAssembler::library)
    set.emplace_back("KILN_PTXAS", ptxas_path());
  TargetDesc nv;
  nv.kind = TargetKind::nvptx;
  for (const std::string& f : toolchain_files(nv))
    if (f != ptxas_path())
      set.emplace_back("KILN_LIBDEVICE", f);
  // The nvJitLink and device runtime files this process links NVIDIA
  // images with (and keys them by), not whatever the environment now names.
  if (std::string nvjitlink = link::nvjitlink_path(); !nvjitlink.empty())
    set.emplace_back("KILN_NVJITLINK", nvjitlink);
  if (std::string devrt = link::cuda_device_runtime_path(); !devrt.empty())
    set.emplace_back("KILN_CUDADEVRT", devrt);
  return set;
}

// The environment a worker starts with: this process's. Nothing in it is
// resolved first, so that a worker can start before anything else is done.
std::vector<std::string> worker_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e)
    env.emplace_back(*e);
  return env;
}

// An fd at or above 3, so that dup2 onto 0..2 in the child always clears
// its close-on-exec flag.
int above_stdio(int fd) {
  if (fd >= 3)
    return fd;
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  ::close(fd);
  return moved;
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

Error system_error(const std::string& what) {
  return make_error(Code::unavailable, what + ": " + std::strerror(errno));
}

// Keeps this library loaded for good once it has a thread of its own.
void pin_library() {
  Dl_info info;
  if (::dladdr(reinterpret_cast<void*>(&pin_library), &info) && info.dli_fname)
    ::dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
}

// Starts workers from one thread that lives as long as the process: a
// worker's PR_SET_PDEATHSIG fires when the thread that started it ends, and
// the threads that compile come and go with each request.
class Spawner {
public:
  /// Runs `task` on the spawning thread and waits for it; on that thread
  /// itself (a posted task's), runs it at once.
  Status run(const std::function<void()>& task) {
    if (std::this_thread::get_id() == thread_id_) {
      task();
      return Status::ok();
    }
    std::unique_lock lock(mu_);
    KILN_TRY(start_locked());
    Task t{&task, false, {}};
    queue_.push_back(&t);
    work_.notify_one();
    done_.wait(lock, [&] { return t.done; });
    return Status::ok();
  }

  /// Runs `task` on the spawning thread without waiting for it.
  Status post(std::function<void()> task) {
    std::unique_lock lock(mu_);
    KILN_TRY(start_locked());
    auto* t = new Task{nullptr, false, std::move(task)};
    t->fn = &t->owned;
    queue_.push_back(t);
    work_.notify_one();
    return Status::ok();
  }

private:
  Status start_locked() {
    if (started_)
      return Status::ok();
    pin_library();
    try {
      std::thread([this] { loop(); }).detach();
    } catch (const std::system_error& e) {
      return make_error(Code::unavailable,
                        std::string("cannot start the thread that starts code generation "
                                    "workers: ") +
                            e.what());
    }
    started_ = true;
    return Status::ok();
  }

  struct Task {
    const std::function<void()>* fn;
    bool done = false;
    std::function<void()> owned; ///< a posted task's own function, deleted after it runs
  };
  void loop() {
    sigset_t all; // host signals go to the host's threads
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    thread_id_ = std::this_thread::get_id();
    std::unique_lock lock(mu_);
    for (;;) {
      work_.wait(lock, [&] { return !queue_.empty(); });
      Task* t = queue_.front();
      queue_.pop_front();
      lock.unlock();
      (*t->fn)();
      lock.lock();
      if (t->owned) {
        delete t; // posted: nobody waits for it
        continue;
      }
      t->done = true;
      done_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable work_, done_;
  std::deque<Task*> queue_;
  bool started_ = false;
  std::atomic<std::thread::id> thread_id_{};
};

class Pool {
public:
  /// An idle worker that is still alive, else one started ahead (once it
  /// has said hello), else a new one.
  Result<std::unique_ptr<Worker>> acquire() {
    for (;;) {
      std::vector<std::unique_ptr<Worker>> dead;
      std::unique_ptr<Worker> w;
      bool greet_it = false;
      {
        std::unique_lock lock(mu_);
        while (!idle_.empty() && !w) {
          std::unique_ptr<Worker> cand = std::move(idle_.back());
          idle_.pop_back();
          if (idle_alive(*cand)) {
            w = std::move(cand);
          } else {
            dead.push_back(std::move(cand));
            ++lost_;
          }
        }
        if (!w) {
          // One being started ahead is as good as ready: wait for it rather
          // than start another.
          prestarted_.wait(lock, [&] { return prestarting_ == 0 || !starting_.empty(); });
          if (!starting_.empty()) {
            w = std::move(starting_.front());
            starting_.pop_front();
            greet_it = true;
          }
        }
        if (w)
          busy_.push_back(w->pid);
      }
      for (auto& d : dead)
        reap(*d, kExitTimeout);
      if (!w)
        break;
      if (!greet_it || greet(*w))
        return w;
      // It died or failed to start: as a dead idle worker, try the next.
      std::lock_guard lock(mu_);
      unbusy(w->pid);
      ++lost_;
    }
    auto started = start();
    if (!started)
      return started.error();
    std::lock_guard lock(mu_);
    ++started_;
    busy_.push_back((*started)->pid);
    return started;
  }

  void release(std::unique_ptr<Worker> w) {
    w->err_tail.clear();
    std::lock_guard lock(mu_);
    unbusy(w->pid);
    idle_.push_back(std::move(w));
  }

  /// Takes a worker out of the pool: reads what it still prints, collects
  /// it (killing it first when it may be alive) and says how it ended.
  Ending lose(std::unique_ptr<Worker> w, bool kill_first) {
    {
      std::lock_guard lock(mu_);
      unbusy(w->pid);
      ++lost_;
    }
    std::string how;
    if (kill_first) {
      how = reap(*w, std::chrono::milliseconds(0));
      drain_stderr(*w, Clock::now() + kDrainTimeout);
    } else {
      drain_stderr(*w, Clock::now() + kDrainTimeout);
      how = reap(*w, kExitTimeout);
    }
    return {how, what_it_said(w->err_tail)};
  }

  WorkerPoolStats stats() {
    std::lock_guard lock(mu_);
    WorkerPoolStats s;
    for (const auto& w : idle_)
      s.idle_pids.push_back(w->pid);
    for (const auto& w : starting_)
      s.idle_pids.push_back(w->pid);
    s.busy_pids.assign(busy_.begin(), busy_.end());
    s.started = started_;
    s.lost = lost_;
    s.links_declined = links_declined.load();
    return s;
  }

  /// NVIDIA links a worker declined (its tools were not this process's).
  std::atomic<uint64_t> links_declined{0};

  /// Starts workers on the spawning thread, without waiting for them, until
  /// `n` are idle or starting: their start (mostly loading LLVM) overlaps
  /// what the caller does meanwhile.
  void prestart(unsigned n) {
    {
      std::lock_guard lock(mu_);
      if (idle_.size() + starting_.size() + prestarting_ >= n)
        return;
      n -= unsigned(idle_.size() + starting_.size() + prestarting_);
      prestarting_ += n;
    }
    Status posted = spawner_.post([this, n] {
      for (unsigned i = 0; i < n; ++i) {
        auto w = spawn();
        std::lock_guard lock(mu_);
        --prestarting_;
        if (w) {
          starting_.push_back(w.take());
          ++started_;
        }
        prestarted_.notify_all();
      }
    });
    if (!posted) {
      std::lock_guard lock(mu_);
      prestarting_ -= n;
      prestarted_.notify_all();
    }
  }

  void stop_idle() {
    std::vector<std::unique_ptr<Worker>> idle;
    {
      std::unique_lock lock(mu_);
      prestarted_.wait(lock, [&] { return prestarting_ == 0; });
      idle.swap(idle_);
      for (auto& w : starting_)
        idle.push_back(std::move(w));
      starting_.clear();
    }
    for (auto& w : idle)
      w->close_chan(); // each exits at end of file
    for (auto& w : idle)
      reap(*w, kExitTimeout);
  }

private:
  // An idle worker writes nothing: a readable or hung-up socket means it died.
  static bool idle_alive(const Worker& w) {
    pollfd p{w.chan, POLLIN, 0};
    return ::poll(&p, 1, 0) == 0;
  }

  void unbusy(pid_t pid) {
    auto it = std::find(busy_.begin(), busy_.end(), pid);
    if (it != busy_.end())
      busy_.erase(it);
  }

  Result<std::unique_ptr<Worker>> start() {
    KILN_TRY_ASSIGN(auto w, spawn());
    KILN_TRY(greet(*w));
    return w;
  }

  // A worker process, started; it has not said hello yet.
  Result<std::unique_ptr<Worker>> spawn() {
    KILN_TRY_ASSIGN(std::string path, codegen_worker_path());
    auto w = std::make_unique<Worker>();
    w->path = path;
    int sv[2], ep[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      return system_error("cannot create a socket for the code generation worker");
    w->chan = sv[0];
    if (::pipe2(ep, O_CLOEXEC) != 0) {
      ::close(sv[1]);
      return system_error("cannot create a pipe for the code generation worker");
    }
    w->err = ep[0];
    int child_chan = above_stdio(sv[1]), child_err = above_stdio(ep[1]);
    if (child_chan < 0 || child_err < 0) {
      if (child_chan >= 0)
        ::close(child_chan);
      if (child_err >= 0)
        ::close(child_err);
      return system_error("cannot set up the code generation worker's descriptors");
    }

    // The child: the socket on 0, its stdout and stderr into our pipe, no
    // other descriptor, default signal dispositions (a host may ignore
    // SIGPIPE or SIGCHLD), nothing blocked.
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, child_chan, 0);
    posix_spawn_file_actions_adddup2(&fa, child_err, 1);
    posix_spawn_file_actions_adddup2(&fa, child_err, 2);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    std::vector<std::string> args = {path, "--parent", std::to_string(::getpid())};
    std::vector<std::string> env = worker_environment();
    std::vector<char*> argv, envp;
    for (std::string& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    for (std::string& e : env)
      envp.push_back(e.data());
    envp.push_back(nullptr);

    int rc = 0;
    pid_t pid = -1;
    Status ran = spawner_.run(
        [&] { rc = ::posix_spawn(&pid, path.c_str(), &fa, &attr, argv.data(), envp.data()); });
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    ::close(child_chan);
    ::close(child_err);
    if (!ran)
      return ran.error();
    if (rc != 0)
      return make_error(Code::unavailable, "cannot start the code generation worker '" + path +
                                               "': " + std::strerror(rc));
    w->pid = pid;
    set_nonblocking(w->chan);
    set_nonblocking(w->err);
    return w;
  }

  // Waits for a started worker's hello; a worker that does not give it is
  // collected, and the error says why.
  Status greet(Worker& worker) {
    Worker* w = &worker;
    const std::string& path = w->path;
    std::string hello;
    Io io = transfer(*w, nullptr, &hello, Clock::now() + kStartTimeout);
    if (io != Io::ok) {
      bool alive = io != Io::closed;
      if (!alive)
        drain_stderr(*w, Clock::now() + kDrainTimeout);
      std::string how = reap(*w, alive ? std::chrono::milliseconds(0) : kExitTimeout);
      std::string said = what_it_said(w->err_tail);
      std::string why = io == Io::timed_out ? "it did not answer within " +
                                                  std::to_string(kStartTimeout.count()) +
                                                  " s and was killed"
                        : io == Io::bad_frame ? "its first message is malformed"
                                              : "it " + how;
      return make_error(Code::unavailable, "the code generation worker '" + path +
                                               "' did not start: " + why +
                                               (said.empty() ? "" : ": " + said));
    }
    if (Status s = worker::check_hello(hello, path); !s) {
      reap(*w, std::chrono::milliseconds(0));
      return s.error();
    }
    return Status::ok();
  }

  std::mutex mu_;
  std::condition_variable prestarted_;
  std::deque<std::unique_ptr<Worker>> starting_; ///< started ahead, hello not yet read
  unsigned prestarting_ = 0;                     ///< posted to the spawner, not yet started
  std::vector<std::unique_ptr<Worker>> idle_;
  std::vector<pid_t> busy_;
  uint64_t started_ = 0, lost_ = 0;
  Spawner spawner_;
};

// The pool, made once per process and never destroyed (a worker may be
// returned to it while the process exits). A child made by fork without
// exec starts with no pool: the parent's workers and its spawning thread
// are not the child's.
std::atomic<Pool*> g_pool{nullptr};

Pool& the_pool() {
  static std::once_flag once;
  std::call_once(once, [] {
    ::pthread_atfork(nullptr, nullptr, [] { g_pool.store(nullptr, std::memory_order_relaxed); });
  });
  Pool* p = g_pool.load(std::memory_order_acquire);
  if (p)
    return *p;
  auto* fresh = new Pool();
  if (g_pool.compare_exchange_strong(p, fresh, std::memory_order_acq_rel))
    return *fresh;
  delete fresh;
  return *p;
}

// A worker held for one job: lost (killed and collected) unless the job
// ends with a well-formed response, so an exception cannot leak it.
class Lease {
public:
  Lease(Pool& pool, std::unique_ptr<Worker> w) : pool_(pool), w_(std::move(w)) {}
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease() {
    if (w_)
      pool_.lose(std::move(w_), true);
  }
  Worker& operator*() { return *w_; }
  void release() { pool_.release(std::move(w_)); }
  Ending lose(bool kill_first) { return pool_.lose(std::move(w_), kill_first); }

private:
  Pool& pool_;
  std::unique_ptr<Worker> w_;
};

} // namespace

namespace {

// KILN_CODEGEN_ISOLATION, lowercased; empty when unset.
std::string isolation_setting() {
  const char* v = std::getenv("KILN_CODEGEN_ISOLATION");
  std::string s(v ? v : "");
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool isolation_off(const std::string& s) {
  return s == "0" || s == "off" || s == "false" || s == "no";
}

} // namespace

bool codegen_isolation_enabled() {
  std::string s = isolation_setting();
  return !(isolation_off(s) || s == "bitcode");
}

bool bitcode_isolation_enabled() { return !isolation_off(isolation_setting()); }

Result<std::string> codegen_worker_path() {
  if (const char* forced = std::getenv("KILN_CODEGEN_WORKER"); forced && *forced) {
    if (::access(forced, X_OK) == 0)
      return std::string(forced);
    return make_error(Code::unavailable, std::string("no code generation worker at '") + forced +
                                             "' ($KILN_CODEGEN_WORKER): " + std::strerror(errno));
  }
  Dl_info info;
  if (!::dladdr(reinterpret_cast<void*>(&codegen_worker_path), &info) || !info.dli_fname)
    return make_error(Code::unavailable,
                      "cannot tell where libkiln-compiler is, to find its code generation worker; "
                      "set KILN_CODEGEN_WORKER to the path of kiln-codegen-worker");
  std::string lib = info.dli_fname;
  if (char* real = ::realpath(lib.c_str(), nullptr)) {
    lib = real;
    std::free(real);
  }
  size_t slash = lib.rfind('/');
  std::string dir = slash == std::string::npos ? "." : lib.substr(0, slash);
  std::vector<std::string> looked;
  for (const char* rel : {KILN_WORKER_INSTALL_DIR_REL, KILN_WORKER_BUILD_DIR_REL, "."}) {
    std::string cand =
        (std::filesystem::path(dir) / rel / worker::kExecutableName).lexically_normal().string();
    if (std::find(looked.begin(), looked.end(), cand) != looked.end())
      continue;
    if (::access(cand.c_str(), X_OK) == 0)
      return cand;
    looked.push_back(cand);
  }
  std::string where;
  for (const std::string& l : looked)
    where += (where.empty() ? "" : ", ") + l;
  return make_error(Code::unavailable,
                    std::string("no code generation worker (") + worker::kExecutableName +
                        ") beside " + lib + ": looked for " + where +
                        "; set KILN_CODEGEN_WORKER to its path (KILN_CODEGEN_ISOLATION=0 compiles "
                        "in this process instead, where a crash of LLVM ends the process)");
}

namespace {

// One request to a worker: the message `make` writes for the toolchain in
// force, and the worker's decoded response. A worker that dies or breaks the
// protocol is an internal error saying that `what` crashed (or failed), with
// the end of what it printed, and `*died` (where given) is set; the caller
// adds where. A worker that has not answered by `deadline` (where given) is
// killed, and `*died` is set too.
Result<Result<std::vector<CompiledArtifact>>>
exchange(const std::function<std::string(const worker::Toolchain&)>& make, const char* what,
         std::vector<std::string>* warnings, bool* died = nullptr,
         std::optional<std::chrono::milliseconds> limit = std::nullopt) {
  Pool& pool = the_pool();
  worker::Toolchain toolchain = toolchain_settings();
  auto acquired = pool.acquire();
  if (!acquired)
    return acquired.error();
  // A worker takes its toolchain from its first job and keeps it, adding
  // NVIDIA's when they first come: one given another is replaced.
  while ((*acquired)->toolchain &&
         !worker::toolchain_extends(*(*acquired)->toolchain, toolchain)) {
    Lease stale(pool, acquired.take());
    stale.lose(true);
    acquired = pool.acquire();
    if (!acquired)
      return acquired.error();
  }
  Lease w(pool, acquired.take());
  (*w).toolchain = toolchain;
  std::string reply;
  Io io;
  {
    std::string request = make(toolchain);
    std::optional<Clock::time_point> deadline;
    if (limit)
      deadline = Clock::now() + *limit;
    io = transfer(*w, &request, &reply, deadline);
  }
  if (io != Io::ok) {
    pid_t pid = (*w).pid;
    Ending end = w.lose(io != Io::closed);
    if (died)
      *died = io != Io::bad_frame;
    if (io == Io::bad_frame)
      return make_error(Code::internal, "the code generation worker (pid " +
                                            std::to_string(pid) +
                                            ") broke the protocol and was killed");
    if (io == Io::timed_out)
      return make_error(Code::internal,
                        std::string(what) + " did not finish within " + seconds_text(*limit) +
                            ": its worker process (pid " + std::to_string(pid) + ") was killed");
    return make_error(Code::internal,
                      std::string(what) + " crashed: its worker process (pid " +
                          std::to_string(pid) + ") " + end.how +
                          (end.said.empty() ? ", printing nothing"
                                            : "; it printed:\n" + end.said));
  }
  std::string why;
  auto result = worker::decode_response(reply, &why, warnings);
  if (!result) {
    pid_t pid = (*w).pid;
    w.lose(true);
    return make_error(Code::internal, "the code generation worker (pid " + std::to_string(pid) +
                                          ") sent a malformed response (" + why +
                                          ") and was killed");
  }
  w.release();
  return std::move(*result);
}

} // namespace

Result<std::vector<CompiledArtifact>> compile_job_isolated(const JobInput& job,
                                                           const TargetDesc& target,
                                                           const CodegenOptions& options,
                                                           std::vector<std::string>* warnings) {
  if (!codegen_isolation_enabled())
    return compile_job(job, target, options, warnings);
  auto result = exchange(
      [&](const worker::Toolchain& toolchain) {
        return worker::encode_request(job, target, options, toolchain);
      },
      "code generation", warnings);
  if (!result)
    return std::move(result.error())
        .context("job '" + job.entry + "' (" + target.spec + ")")
        .with_entry(job.entry)
        .with_target(target.spec);
  if (!*result)
    return result->error().with_entry(job.entry).with_target(target.spec);
  return std::move(**result);
}

Result<std::string> nvlink_isolated(const std::vector<link::NvInput>& inputs,
                                    const std::string& arch, bool device_runtime) {
  if (!codegen_isolation_enabled())
    return link::nvjitlink_cubin(inputs, arch, device_runtime);
  auto result = exchange(
      [&](const worker::Toolchain& toolchain) {
        return worker::encode_nvlink_request(inputs, arch, device_runtime, toolchain);
      },
      "nvJitLink", nullptr);
  if (!result)
    return std::move(result.error()).context("linking an image for " + arch).with_target(arch);
  // A worker that would link with other tools than this process's (its
  // files changed on disk since this process found them) declines: linked
  // here instead, with the tools the image's key names.
  if (!*result && result->error().code == Code::unavailable) {
    ++the_pool().links_declined;
    return link::nvjitlink_cubin(inputs, arch, device_runtime);
  }
  if (!*result)
    return result->error();
  if ((*result)->size() != 1 || (**result)[0].format != "cubin")
    return make_error(Code::internal, "the code generation worker linked no image for " + arch);
  return std::move((**result)[0].bytes);
}

namespace {

// How long LLVM's bitcode reader may take over `size` bytes
// (KILN_BITCODE_READ_TIMEOUT, in seconds, replaces it).
std::chrono::milliseconds bitcode_read_limit(size_t size) {
  if (const char* v = std::getenv("KILN_BITCODE_READ_TIMEOUT"); v && *v) {
    char* end = nullptr;
    double s = std::strtod(v, &end);
    if (end && *end == '\0' && s > 0 && s < 1e6)
      return std::chrono::milliseconds(std::max<long long>(1, (long long)(s * 1000)));
  }
  // Real bitcode reads at well over 10 MiB/s, and a front end's module is a
  // few MiB at most: the limit is for a stream that sends the reader round
  // in circles, not for a large module.
  return std::chrono::seconds(60) + std::chrono::milliseconds(size / 10000);
}

} // namespace

Status check_bitcode_isolated(const std::string& name, const std::string& bytes) {
  if (!bitcode_isolation_enabled())
    return Status::ok();
  bool died = false;
  auto result = exchange(
      [&](const worker::Toolchain& toolchain) {
        return worker::encode_read_request(name, bytes, toolchain);
      },
      "LLVM's bitcode reader", nullptr, &died, bitcode_read_limit(bytes.size()));
  if (!result) {
    Error e = std::move(result.error());
    // The input, not Kiln, is at fault when the reader dies on it.
    if (died)
      e.code = Code::invalid_argument;
    return std::move(e).context("reading '" + name + "'").at(name);
  }
  return Status::ok();
}

void prestart_workers(unsigned n) {
  if (n && codegen_isolation_enabled())
    the_pool().prestart(n);
}

WorkerPoolStats worker_pool_stats() { return the_pool().stats(); }

void stop_idle_workers() { the_pool().stop_idle(); }

} // namespace kiln::codegen
