// What a writable cache means is documented; what the code can enforce is
// tested here: owner-only permissions whatever the umask, on the cache file,
// its directories and SQLite's side files; SQL built only from literals
// with bound parameters.
#include "common.hpp"

#include <doctest/doctest.h>

#include <kiln/kiln.h>

#include <sys/stat.h>

#include <fstream>
#include <regex>

#ifndef KILN_SOURCE_DIR
#error "KILN_SOURCE_DIR must be defined"
#endif

using namespace kiln_rel;

namespace {

unsigned mode_of(const fs::path& p) {
  struct stat st;
  REQUIRE_MESSAGE(::stat(p.c_str(), &st) == 0, p);
  return st.st_mode & 07777;
}

} // namespace

TEST_SUITE("reliability.security") {

TEST_CASE("a new cache is 0600 in 0700 directories even with umask 0") {
  TempDir dir;
  fs::path db = dir.path() / "a" / "b" / "kiln.db";
  RunResult r = run({"/bin/sh", "-c", "umask 0; exec \"$@\"", "sh", precompile_bin().string(),
                     "--cache", db.string(), kiln_it::data("nested.ll")});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(mode_of(db) == 0600);
  CHECK(mode_of(dir.path() / "a") == 0700);
  CHECK(mode_of(dir.path() / "a" / "b") == 0700);
  // SQLite's WAL and shared-memory files take the database's permissions.
  kiln_cache* cache = nullptr;
  kiln_image* image = nullptr;
  REQUIRE(kiln_cache_open(db.c_str(), &cache) == KILN_OK);
  REQUIRE(kiln_image_load(cache, "nest_a", "host", &image) == KILN_OK);
  for (const char* side : {"-wal", "-shm"})
    if (fs::exists(db.string() + side))
      CHECK(mode_of(db.string() + side) == 0600);
  kiln_image_release(image);
  kiln_cache_close(cache);
}

TEST_CASE("SQL reaches SQLite only as literals, with values bound as parameters") {
  // Every call that hands SQL text to SQLite: its SQL argument must be a
  // string literal, or one of the few names below, each of which only ever
  // holds literals or integers (checked by reading their definitions).
  const std::map<std::string, std::string> allowed = {
      {"sql", "a helper's parameter; its callers pass literals"},
      {"c.sql", "a member of a constant table of literals (verify's checks)"},
      {"m.sql", "a migration, embedded from schema/ at build time"},
      {"journal", "one of two literal PRAGMAs"},
      {"pragmas.c_str()", "two PRAGMAs built from integer constants"},
      {"options.vacuum ? \"VACUUM\" : \"PRAGMA incremental_vacuum\"", "two literals"},
  };
  std::regex call(R"((?:\b|->|\.)(sqlite3_exec|sqlite3_prepare_v[23]?|exec|prepare)\()");
  int calls = 0;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(KILN_SOURCE_DIR) / "src")) {
    if (e.path().extension() != ".cpp")
      continue;
    std::ifstream f(e.path());
    std::string text((std::istreambuf_iterator<char>(f)), {});
    for (auto it = std::sregex_iterator(text.begin(), text.end(), call); it != std::sregex_iterator();
         ++it) {
      size_t start = size_t(it->position(0) + it->length(0));
      // Skip declarations and definitions of the helpers themselves.
      std::string before = text.substr(text.rfind('\n', size_t(it->position(0))) + 1,
                                       size_t(it->position(0)) - text.rfind('\n', size_t(it->position(0))) - 1);
      if (before.find("Status") != std::string::npos || before.find("Result<") != std::string::npos)
        continue;
      // The arguments up to the matching parenthesis.
      int depth = 1;
      size_t end = start;
      bool in_str = false;
      for (; end < text.size() && depth > 0; ++end) {
        char c = text[end];
        if (in_str) {
          if (c == '\\')
            ++end;
          else if (c == '"')
            in_str = false;
          continue;
        }
        if (c == '"')
          in_str = true;
        else if (c == '(')
          ++depth;
        else if (c == ')')
          --depth;
      }
      std::string args = text.substr(start, end - start - 1);
      std::string name = (*it)[1];
      if (name.rfind("sqlite3_", 0) == 0) {
        // sqlite3_*(db, SQL, ...): the second argument.
        size_t comma = args.find(',');
        REQUIRE(comma != std::string::npos);
        args = args.substr(comma + 1);
      }
      // The first argument, whitespace trimmed.
      int d = 0;
      in_str = false;
      size_t stop = 0;
      for (; stop < args.size(); ++stop) {
        char c = args[stop];
        if (in_str) {
          if (c == '\\')
            ++stop;
          else if (c == '"')
            in_str = false;
          continue;
        }
        if (c == '"')
          in_str = true;
        else if (c == '(')
          ++d;
        else if (c == ')')
          --d;
        else if (c == ',' && d == 0)
          break;
      }
      std::string arg = std::regex_replace(args.substr(0, stop), std::regex(R"(^\s+|\s+$)"), "");
      arg = std::regex_replace(arg, std::regex(R"(\s+)"), " ");
      if (arg.empty())
        continue; // not a call with SQL (e.g. a method of another class)
      ++calls;
      // A literal, or adjacent literals and macros: no '+' outside quotes.
      bool literal = arg.front() == '"';
      for (size_t i = 0, q = 0; i < arg.size(); ++i) {
        if (arg[i] == '\\' && q) {
          ++i;
          continue;
        }
        if (arg[i] == '"')
          q = !q;
        else if (arg[i] == '+' && !q)
          literal = false;
      }
      INFO(e.path().filename().string() << ": " << name << "(" << arg << ")");
      CHECK((literal || allowed.count(arg) == 1));
    }
  }
  CHECK(calls > 20);
}

} // TEST_SUITE
