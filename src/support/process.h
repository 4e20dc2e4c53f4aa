// Running a helper program (e.g. the CUDA toolkit's ptxas) and capturing
// its output. Knows nothing of jobs or caches.
#pragma once

#include <kiln/result.hpp>

#include <string>
#include <vector>

namespace kiln {

struct ProcessResult {
  int exit_code = -1; ///< 128 + signal if killed
  std::string output; ///< stdout and stderr together
};

/// Runs argv[0] (a path) with argv, stdin from /dev/null, in this process's
/// environment plus `defaults` ("NAME=value"), each added only where the
/// environment does not set NAME. Fails only if the program cannot be started.
Result<ProcessResult> run_process(const std::vector<std::string>& argv,
                                  const std::vector<std::string>& defaults = {});

/// The first executable named `name` in $PATH, or empty.
std::string find_in_path(const std::string& name);

/// A CUDA toolkit program (`name`: "ptxas"): $CUDA_HOME/bin's, else
/// /usr/local/cuda/bin's, else the first in $PATH; empty if none. One search
/// for every layer that runs the toolkit's programs.
std::string find_cuda_program(const std::string& name);

} // namespace kiln
