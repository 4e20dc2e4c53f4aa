#include "support/process.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

extern char** environ;

namespace kiln {

Result<ProcessResult> run_process(const std::vector<std::string>& argv,
                                  const std::vector<std::string>& defaults) {
  std::vector<char*> env;
  for (char** e = environ; e && *e; ++e)
    env.push_back(*e);
  for (const std::string& d : defaults) {
    std::string name = d.substr(0, d.find('='));
    if (!std::getenv(name.c_str()))
      env.push_back(const_cast<char*>(d.c_str()));
  }
  env.push_back(nullptr);
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0)
    return make_error(Code::internal, std::string("pipe failed: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = ::posix_spawn(&pid, argv[0].c_str(), &fa, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(pipefd[1]);
  if (rc != 0) {
    ::close(pipefd[0]);
    return make_error(Code::unavailable,
                      "cannot run '" + argv[0] + "': " + std::strerror(rc));
  }
  ProcessResult out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(pipefd[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    out.output.append(buf, size_t(n));
  }
  ::close(pipefd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

std::string find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    std::string dir = p.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!dir.empty()) {
      std::string cand = dir + "/" + name;
      if (::access(cand.c_str(), X_OK) == 0)
        return cand;
    }
    if (end == std::string::npos)
      break;
    start = end + 1;
  }
  return {};
}

std::string find_cuda_program(const std::string& name) {
  std::vector<std::string> dirs;
  if (const char* home = std::getenv("CUDA_HOME"); home && *home)
    dirs.push_back(std::string(home) + "/bin");
  dirs.push_back("/usr/local/cuda/bin");
  for (const std::string& d : dirs)
    if (std::string c = d + "/" + name; ::access(c.c_str(), X_OK) == 0)
      return c;
  return find_in_path(name);
}

} // namespace kiln
