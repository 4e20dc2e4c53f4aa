// Names are bytes: a unit whose functions are named with a byte that is not
// UTF-8 (0xFF) and with terminal control bytes (ESC, CR, LF) goes through
// kiln-precompile and every kiln-inspect command. With --json each answer is
// valid JSON (nlohmann's parser rejects invalid UTF-8), and a string that is
// not UTF-8 carries its exact bytes in "<field>_hex"; text output and error
// messages carry no raw control byte and no invalid UTF-8, only \xNN.
#include "inspect_helpers.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace kiln_it;

namespace {

// \FF is one raw byte 0xFF; \1B[31m is an ANSI "red" sequence; \0D\0A a CR LF.
const char* const kWeirdUnit = R"(declare ptr @kiln_deferred(ptr)

define i32 @"\FFname"(i32 %x) {
  %r = mul i32 %x, 3
  ret i32 %r
}

define i32 @"a\1B[31mred\0D\0Aline"(i32 %x) {
  %p = call ptr @kiln_deferred(ptr @"\FFname")
  %y = add i32 %x, 1
  %r = call i32 %p(i32 %y)
  ret i32 %r
}
)";

const std::string kFF = "\xff" "name";
const std::string kEsc = "a\x1b[31mred\r\nline";

std::string hex_of(const std::string& s) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

/// Whether nlohmann accepts `s` as a JSON string (it refuses invalid UTF-8).
bool valid_utf8(const std::string& s) {
  try {
    (void)json(s).dump();
    return true;
  } catch (const json::exception&) {
    return false;
  }
}

/// What a terminal must not be given: a raw control byte other than the
/// layout's newline and tab, DEL, or bytes that are not UTF-8.
void check_terminal_safe(const std::string& what, const std::string& text) {
  INFO(what << ": " << json(text).dump(-1, ' ', true, json::error_handler_t::replace));
  std::string bad;
  for (unsigned char c : text)
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
      bad += std::to_string(int(c)) + " ";
  CHECK_MESSAGE(bad.empty(), "raw control bytes: " << bad);
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK_MESSAGE(valid_utf8(text), "invalid UTF-8");
}

/// Parses one JSON value from a run's stdout (REQUIREs exit `want`).
json parsed(const RunResult& r, int want, const std::string& what) {
  INFO(what << ": exit " << r.exit_code << ", stderr: " << r.err);
  REQUIRE(r.exit_code == want);
  json j;
  REQUIRE_NOTHROW(j = json::parse(r.out));
  return j;
}

/// The one element of `arr` whose `field` + "_hex" (or, for a UTF-8 value,
/// `field` itself) holds the bytes of `value`.
const json& find_by_bytes(const json& arr, const std::string& field, const std::string& value) {
  const json* hit = nullptr;
  for (const json& e : arr) {
    bool same = e.contains(field + "_hex") ? e[field + "_hex"] == hex_of(value)
                                           : e.value(field, std::string()) == value;
    if (same) {
      CHECK_MESSAGE(hit == nullptr, "two elements with " << field << " " << hex_of(value));
      hit = &e;
    }
  }
  REQUIRE_MESSAGE(hit != nullptr, "no element with " << field << " " << hex_of(value) << " in "
                                                     << arr.dump());
  return *hit;
}

struct WeirdCache {
  Cache cache;
  TempDir dir;
  json pre;
  WeirdCache() {
    write_file(dir.path() / "weird.ll", kWeirdUnit);
    RunResult r = precompile(cache, {"--entry", kFF, "--entry", kEsc, "--library", "lib\xff\x1b",
                                     (dir.path() / "weird.ll").string()});
    pre = parsed(r, 0, "kiln-precompile --json");
    check_terminal_safe("kiln-precompile stderr", r.err);
  }
};

} // namespace

TEST_SUITE_BEGIN("integration.inspect");

TEST_CASE("precompile --json keeps names that are not UTF-8 or hold control bytes") {
  WeirdCache w;
  const json& pre = w.pre;
  REQUIRE(pre["jobs"].is_array());
  REQUIRE(pre["jobs"].size() == 2);

  // Not UTF-8: the invalid byte is U+FFFD, the exact bytes are in entry_hex.
  const json& ff = find_by_bytes(pre["jobs"], "entry", kFF);
  CHECK(ff["entry"] == "\xef\xbf\xbd" "name");
  CHECK(ff["entry_hex"] == "ff6e616d65");
  // UTF-8 with control bytes: as it is (JSON escapes them), no _hex.
  const json& esc = find_by_bytes(pre["jobs"], "entry", kEsc);
  CHECK(esc["entry"] == kEsc);
  CHECK(!esc.contains("entry_hex"));
  REQUIRE(esc["refs"].size() == 1);
  CHECK(esc["refs"][0]["key"] == ff["key"]);

  const json& root = find_by_bytes(pre["roots"], "name", kFF);
  CHECK(root["name_hex"] == hex_of(kFF));
  CHECK(find_by_bytes(pre["roots"], "name", kEsc)["name"] == kEsc);

  REQUIRE(pre.contains("libraries"));
  const json& lib = find_by_bytes(pre["libraries"], "name", "lib\xff\x1b");
  CHECK(lib["name_hex"] == "6c6962ff1b");

  // Again, answered from the request memo: the same bytes.
  RunResult again = precompile(w.cache, {"--entry", kFF, "--entry", kEsc, "--library",
                                         "lib\xff\x1b", (w.dir.path() / "weird.ll").string()});
  json memo = parsed(again, 0, "second kiln-precompile --json");
  CHECK(find_by_bytes(memo["jobs"], "entry", kFF)["key"] == ff["key"]);
}

TEST_CASE("every kiln-inspect --json answer about such names is valid JSON and keeps the bytes") {
  WeirdCache w;
  const std::string ff_key = find_by_bytes(w.pre["jobs"], "entry", kFF)["key"];
  const std::string esc_key = find_by_bytes(w.pre["jobs"], "entry", kEsc)["key"];

  json ls = parsed(inspect(w.cache, {"ls", "--json"}), 0, "ls --json");
  CHECK(find_by_bytes(ls["jobs"], "entry", kFF)["key"] == ff_key);
  CHECK(find_by_bytes(ls["names"], "name", kFF).contains("name_hex"));
  const json& esc_job = find_by_bytes(ls["jobs"], "entry", kEsc);
  REQUIRE(esc_job["refs"].size() == 1);
  CHECK(esc_job["refs"][0]["entry_hex"] == hex_of(kFF));

  json show_job = parsed(inspect(w.cache, {"show", ff_key, "--json"}), 0, "show KEY --json");
  CHECK(show_job["entry_hex"] == hex_of(kFF));
  json show_root = parsed(inspect(w.cache, {"show", kFF, "--json"}), 0, "show NAME --json");
  CHECK(show_root["name_hex"] == hex_of(kFF));
  CHECK(find_by_bytes(show_root["members"], "entry", kFF)["key"] == ff_key);
  json show_esc = parsed(inspect(w.cache, {"show", kEsc, "--json"}), 0, "show NAME --json");
  CHECK(show_esc["name"] == kEsc);

  json graph = parsed(inspect(w.cache, {"graph", kEsc, "--json"}), 0, "graph --json");
  CHECK(find_by_bytes(graph["nodes"], "entry", kFF)["key"] == ff_key);
  CHECK(find_by_bytes(graph["nodes"], "entry", kEsc)["key"] == esc_key);

  json explain = parsed(inspect(w.cache, {"explain", ff_key, esc_key, "--json"}), 0,
                        "explain --json");
  const json& entry_diff = find_by_bytes(explain["differences"], "component", "entry");
  CHECK(entry_diff["a_hex"] == hex_of(kFF));
  CHECK(entry_diff["b"] == kEsc);

  json portable = parsed(inspect(w.cache, {"check-portable", "--json"}), 0,
                         "check-portable --json");
  REQUIRE(portable["details"].is_array());
  bool names_hex = false;
  for (const json& c : portable["details"])
    if (c.contains("names_hex"))
      for (const json& h : c["names_hex"])
        names_hex = names_hex || h == hex_of(kFF);
  CHECK_MESSAGE(names_hex, "no names_hex with the 0xFF name: " << portable.dump());

  json libs = parsed(inspect(w.cache, {"libraries", "--json"}), 0, "libraries --json");
  REQUIRE(libs.is_array());
  CHECK(find_by_bytes(libs, "name", "lib\xff\x1b")["name_hex"] == hex_of("lib\xff\x1b"));
  json lib = parsed(inspect(w.cache, {"library", "lib\xff\x1b", "--json"}), 0, "library --json");
  // roots: an array with an element that is not UTF-8 gains a parallel
  // roots_hex, with every element's bytes.
  REQUIRE(lib["roots_hex"].is_array());
  REQUIRE(lib["roots_hex"].size() == lib["roots"].size());
  std::vector<std::string> roots_hex = lib["roots_hex"].get<std::vector<std::string>>();
  CHECK(std::count(roots_hex.begin(), roots_hex.end(), hex_of(kFF)) == 1);
  for (size_t i = 0; i < roots_hex.size(); ++i)
    if (lib["roots"][i].get<std::string>().find("\xef\xbf\xbd") == std::string::npos)
      CHECK(roots_hex[i] == hex_of(lib["roots"][i].get<std::string>()));

  json stats = parsed(inspect(w.cache, {"stats", "--json"}), 0, "stats --json");
  CHECK(num(stats, "jobs") == 2);
  json verify = parsed(inspect(w.cache, {"verify", "--json"}), 0, "verify --json");
  CHECK(verify["ok"] == true);
}

TEST_CASE("text output and the DOT graph escape control bytes and bytes that are not UTF-8") {
  WeirdCache w;
  const std::string ff_key = find_by_bytes(w.pre["jobs"], "entry", kFF)["key"];
  const std::string esc_key = find_by_bytes(w.pre["jobs"], "entry", kEsc)["key"];
  const std::vector<std::vector<std::string>> commands = {
      {"ls"},           {"show", ff_key},     {"show", esc_key},
      {"show", kFF},    {"show", kEsc},       {"explain", ff_key, esc_key},
      {"graph", kEsc},  {"graph", kEsc, "--dot"},
      {"libraries"},    {"library", "lib\xff\x1b"},
      {"stats"},        {"verify"},           {"check-portable"}};
  for (const auto& args : commands) {
    RunResult r = inspect(w.cache, args);
    INFO("kiln-inspect " << args.front() << " (" << args.size() << " args)");
    CHECK(r.exit_code == 0);
    check_terminal_safe("stdout", r.out);
    check_terminal_safe("stderr", r.err);
  }
  // The bytes are shown, not dropped.
  RunResult ls = inspect(w.cache, {"ls"});
  CHECK(ls.out.find("\\xffname") != std::string::npos);
  CHECK(ls.out.find("a\\x1b[31mred\\x0d\\x0aline") != std::string::npos);

  RunResult dot = inspect(w.cache, {"graph", kEsc, "--dot"});
  REQUIRE(dot.exit_code == 0);
  // Inside a DOT string the escape's backslash is itself escaped.
  CHECK(dot.out.find("label=\"a\\\\x1b[31mred\\\\x0d\\\\x0aline\\n") != std::string::npos);
  if (have("/usr/bin/dot")) {
    TempDir tmp;
    write_file(tmp.path() / "g.dot", dot.out);
    RunResult svg = run({"/usr/bin/dot", "-Tsvg", (tmp.path() / "g.dot").string()});
    INFO("dot -Tsvg: " << describe(svg));
    CHECK(svg.exit_code == 0);
    CHECK(svg.out.find("</svg>") != std::string::npos);
  } else {
    MESSAGE("skipping dot -Tsvg: /usr/bin/dot (graphviz) is not installed");
  }
}

TEST_CASE("errors about such names and paths are valid JSON and escaped text") {
  WeirdCache w;
  // An entry that is not in the unit, named with 0xFF and ESC.
  const std::string missing = "gone\xff\x1b]0;title\x07";
  RunResult r = precompile(w.cache, {"--entry", missing, (w.dir.path() / "weird.ll").string()});
  json e = parsed(r, 2, "precompile --entry missing --json");
  REQUIRE(e["error"].is_object());
  CHECK(e["exit_status"] == 2);
  CHECK(e["error"]["message_hex"].get<std::string>().find(hex_of(missing)) != std::string::npos);
  check_terminal_safe("precompile stderr", r.err);
  CHECK(r.err.find("gone\\xff\\x1b]0;title\\x07") != std::string::npos);

  // An input file and a cache whose paths hold 0xFF and ESC.
  TempDir tmp;
  const fs::path odd_dir = tmp.path() / "c\xff\x1b";
  fs::create_directories(odd_dir);
  write_file(odd_dir / "u\xff.ll", kWeirdUnit);
  const fs::path odd_db = odd_dir / "kiln\xff.db";
  RunResult ok = run({precompile_bin().string(), "--cache", odd_db.string(), "--json", "--entry",
                      kFF, (odd_dir / "u\xff.ll").string()});
  json pre = parsed(ok, 0, "precompile into a cache path with 0xFF");
  CHECK(find_by_bytes(pre["jobs"], "entry", kFF)["entry_hex"] == hex_of(kFF));
  json ls = parsed(inspect_at(odd_db, {"ls", "--json"}), 0, "ls --json on that cache");
  CHECK(find_by_bytes(ls["names"], "name", kFF).contains("name_hex"));

  RunResult no_file = run({precompile_bin().string(), "--cache", odd_db.string(), "--json",
                           (odd_dir / "absent\xff.ll").string()});
  INFO("precompile of a missing file: " << no_file.err);
  CHECK(no_file.exit_code != 0);
  CHECK(no_file.exit_code < 128); // an error exit, not a signal
  json nf;
  REQUIRE_NOTHROW(nf = json::parse(no_file.out));
  CHECK(nf["error"]["message_hex"].get<std::string>().find(hex_of("absent\xff.ll")) !=
        std::string::npos);
  check_terminal_safe("precompile stderr", no_file.err);

  const fs::path no_db = odd_dir / "none\xff.db";
  RunResult no_cache = inspect_at(no_db, {"ls", "--json"});
  json nc = parsed(no_cache, 1, "ls --json on a missing cache");
  CHECK(nc["error"]["message_hex"].get<std::string>().find(hex_of(no_db.string())) !=
        std::string::npos);
  check_terminal_safe("inspect stderr", no_cache.err);

  // A usage error quoting an argument: JSON and stderr alike.
  RunResult usage = inspect(w.cache, {"ls", "--json", "--bogus\xff\x1b"});
  json u = parsed(usage, 2, "ls --json --bogus");
  CHECK(u["error"]["code"] == "invalid_argument");
  check_terminal_safe("inspect usage stderr", usage.err);
}

TEST_SUITE_END();
