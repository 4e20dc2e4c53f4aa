#include "codegen/ptxas.h"

#include "support/files.h"
#include "support/process.h"

#include <cstdlib>
#include <unistd.h>

namespace kiln::codegen {

const std::string& ptxas_path() {
  static const std::string path = [] {
    if (const char* p = std::getenv("KILN_PTXAS"))
      return std::string(p); // empty disables cubin generation
    std::vector<std::string> cands;
    if (const char* home = std::getenv("CUDA_HOME"); home && *home)
      cands.push_back(std::string(home) + "/bin/ptxas");
    cands.push_back("/usr/local/cuda/bin/ptxas");
    for (const std::string& c : cands)
      if (::access(c.c_str(), X_OK) == 0)
        return c;
    return find_in_path("ptxas");
  }();
  return path;
}

const std::string& ptxas_version() {
  static const std::string version = []() -> std::string {
    if (ptxas_path().empty())
      return {};
    auto r = run_process({ptxas_path(), "--version"});
    if (!r || r->exit_code != 0)
      return {};
    // Last line with a "V<major>.<minor>.<patch>" word, e.g. "... release 13.0, V13.0.88".
    size_t v = r->output.rfind(", V");
    if (v == std::string::npos)
      return "ptxas unknown";
    size_t end = r->output.find_first_of("\r\n", v);
    return "ptxas " + r->output.substr(v + 2, end == std::string::npos ? std::string::npos
                                                                        : end - v - 2);
  }();
  return version;
}

Result<std::string> assemble_ptx(const std::string& ptx, const std::string& arch,
                                 const std::string& what) {
  if (ptxas_path().empty())
    return make_error(Code::unavailable, what + ": no ptxas (set KILN_PTXAS or CUDA_HOME)");
  KILN_TRY_ASSIGN(auto dir, TempDir::create("kiln-ptxas"));
  std::string in = dir.path() + "/job.ptx", out = dir.path() + "/job.cubin";
  KILN_TRY(write_file_atomic(in, ptx));
  auto r = run_process({ptxas_path(), "-c", "-arch=" + arch, "-o", out, in});
  if (!r)
    return r.error().context(what);
  if (r->exit_code != 0) {
    // ptxas names its input by the temporary file: name the job's PTX instead.
    std::string log = r->output;
    for (size_t at; (at = log.find(in)) != std::string::npos;)
      log.replace(at, in.size(), "job.ptx");
    return make_error(Code::internal, what + ": ptxas -arch=" + arch + " failed (exit " +
                                          std::to_string(r->exit_code) + "): " + log);
  }
  return read_file(out);
}

} // namespace kiln::codegen
