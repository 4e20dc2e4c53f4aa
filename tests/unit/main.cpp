// The unit tests' main. The tests link every layer into this program
// (tests/CMakeLists.txt), so the libraries that code opens beside libkiln
// (libkiln-link for lld, libkiln-compiler for a memo miss) are not beside
// it: they are named here, unless the environment already names them (a
// test that sets either variable itself still decides).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>

int main(int argc, char** argv) {
  ::setenv("KILN_LINK_LIBRARY", KILN_TEST_LINK_LIBRARY, 0);
  ::setenv("KILN_COMPILER_LIBRARY", KILN_TEST_COMPILER_LIBRARY, 0);
  return doctest::Context(argc, argv).run();
}
