// Included before headers that include <iostream> without using it (cereal's
// access.hpp). <iostream> puts a static std::ios_base::Init in every file
// that includes it, which builds the eight standard streams and the classic
// locale when libkiln is loaded: libkiln carries its own libstdc++, so every
// process that links it paid for that at start, before any call. The stream
// headers are included here instead, and libstdc++'s guard for <iostream> is
// set so that a later include of it adds nothing. A file that writes to
// std::cout or std::cerr includes <iostream> itself, before this header.
#pragma once

#include <istream>
#include <ostream>

#ifndef _GLIBCXX_IOSTREAM
#define _GLIBCXX_IOSTREAM 1
#endif
