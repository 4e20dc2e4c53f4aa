// How kiln-precompile and kiln-inspect write strings they did not make:
// kiln/text.hpp's scheme (JSON that keeps every byte; text with control
// bytes escaped), under the tools' own namespace.
#pragma once

#include <kiln/text.hpp>

namespace kiln::tools {
using namespace kiln::text;
} // namespace kiln::tools
