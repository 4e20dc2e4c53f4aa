// A caller's exception thrown through libkiln's frames, in a fresh process
// that links only the installed-style libraries (libkiln, which loads
// libkiln-compiler on a memo miss) and where libkiln has thrown nothing
// before: the progress callback throws, and compile_on_demand returns the
// error instead of the process aborting. libkiln must use the process's one
// unwinder for this (src/CMakeLists.txt).
//
//   kiln_embed_foreign_exception EXAMPLES_DIR WORK_DIR
#include <kiln/compiler.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: kiln_embed_foreign_exception EXAMPLES_DIR WORK_DIR\n");
    return 2;
  }
  std::string cache = std::string(argv[2]) + "/foreign-exception.db";
  std::remove(cache.c_str());
  kiln::CompileRequest req;
  req.inputs.push_back(kiln::SourceInput::file(std::string(argv[1]) + "/deferred.ll"));
  req.entries = {"collatz"};
  size_t calls = 0;
  req.progress = [&](const kiln::Progress&) {
    ++calls;
    throw std::runtime_error("display closed");
  };
  auto thrown = kiln::compile_on_demand(req, cache);
  if (thrown || thrown.error().code != kiln::Code::internal ||
      thrown.error().message.find("display closed") == std::string::npos || calls != 1) {
    std::fprintf(stderr, "expected the callback's error once, got %s after %zu calls\n",
                 thrown ? "success" : thrown.error().message.c_str(), calls);
    return 1;
  }
  // The cache is whole: the same request without the callback compiles.
  req.progress = nullptr;
  auto again = kiln::compile_on_demand(req, cache);
  if (!again || !again->ok()) {
    std::fprintf(stderr, "the request without the callback failed: %s\n",
                 again ? "a job failed" : again.error().message.c_str());
    return 1;
  }
  std::printf("the callback's exception came back as an error\n");
  return 0;
}
