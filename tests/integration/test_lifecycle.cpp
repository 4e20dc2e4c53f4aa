// Cache lifecycle through kiln-inspect: stats (counters, sizes), graph (JSON
// and DOT), verify (healthy and damaged caches), gc (size and age limits,
// LRU order, dry run), export/import bundles (round trip, idempotence,
// damaged bundles), explain (key differences), config (stored and
// environment size limits), the automatic size limit, `kiln-precompile
// --explain`, and a cache file that still loads after being moved.
#include "harness.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <optional>
#include <thread>
#include <tuple>

using namespace kiln_it;

namespace {

constexpr int kExitNotFound = 1;
constexpr int kExitUsage = 2;

/// kiln-inspect <args...>: REQUIREs exit `want` and one JSON object on stdout.
json inspect_json(const Cache& cache, const std::vector<std::string>& args, int want = 0) {
  RunResult r = inspect(cache, args);
  INFO("kiln-inspect " << args.front() << ": " << describe(r));
  REQUIRE(r.exit_code == want);
  json j;
  REQUIRE_NOTHROW(j = json::parse(r.out));
  REQUIRE(j.is_object());
  return j;
}

/// kiln-inspect on an arbitrary cache path (not a harness Cache).
RunResult inspect_at(const fs::path& db, const std::vector<std::string>& args) {
  std::vector<std::string> argv{inspect_bin().string(), "--cache", db.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv);
}

/// An integer field of a JSON object (REQUIREs that it is one).
std::int64_t num(const json& j, const char* field) {
  INFO("field " << field << " of " << j.dump());
  REQUIRE(j.contains(field));
  REQUIRE(j[field].is_number_integer());
  return j[field].get<std::int64_t>();
}

const char* const kCounters[] = {"job_hits", "job_misses", "image_hits", "image_misses", "loads"};
const char* const kIntFields[] = {"jobs",       "closures",  "images",     "names",
                                  "stored_bytes", "raw_bytes", "file_bytes", "max_size",
                                  "job_hits",   "job_misses", "image_hits", "image_misses",
                                  "loads"};

/// stats --json, with every field of the contract checked for type.
json stats(const Cache& cache) {
  json s = inspect_json(cache, {"stats", "--json"});
  INFO("stats: " << s.dump());
  for (const char* f : kIntFields)
    CHECK(num(s, f) >= 0);
  REQUIRE(s.contains("ratio"));
  if (num(s, "raw_bytes") > 0)
    CHECK(s["ratio"].is_number_float());
  else // nothing stored: any number, or null
    CHECK((s["ratio"].is_number() || s["ratio"].is_null()));
  REQUIRE(s.contains("targets"));
  CHECK(s["targets"].is_object());
  return s;
}

bool have(const char* tool) { return fs::exists(tool); }

/// Runs one SQL statement on the cache file with the sqlite3 CLI; REQUIREs success.
void sql(const Cache& cache, const std::string& statement) {
  RunResult r = run({"/usr/bin/sqlite3", cache.db().string(), statement});
  INFO("sqlite3 " << statement << ": " << describe(r));
  REQUIRE(r.exit_code == 0);
}

/// Loads `name` from the cache file at `db` in-process and calls `entry`
/// (int(int)) with `arg`. Returns the result, or nothing (with the reason in
/// *why) if the cache does not open or the name does not load.
std::optional<int> try_call(const fs::path& db, const std::string& name, const char* entry,
                            int arg, std::string* why = nullptr) {
  kiln_cache* c = nullptr;
  kiln_status st = kiln_cache_open(db.c_str(), &c);
  if (st != KILN_OK) {
    if (why)
      *why = std::string(kiln_status_name(st)) + ": " + kiln_last_error();
    return std::nullopt;
  }
  kiln_image* img = nullptr;
  st = kiln_image_load(c, name.c_str(), "host", &img);
  if (st != KILN_OK) {
    if (why)
      *why = std::string(kiln_status_name(st)) + ": " + kiln_last_error();
    kiln_cache_close(c);
    return std::nullopt;
  }
  void* address = nullptr;
  std::optional<int> result;
  st = kiln_image_lookup(img, entry, &address);
  if (st == KILN_OK && address) {
    I32Fn f;
    std::memcpy(&f, &address, sizeof f);
    result = f(arg);
  } else if (why) {
    *why = std::string(kiln_status_name(st)) + ": " + kiln_last_error();
  }
  kiln_image_release(img);
  kiln_cache_close(c);
  return result;
}

/// Creates an empty cache file through the C API (kiln-inspect itself never
/// creates a cache).
void make_empty(const Cache& cache) {
  kiln_cache* c = nullptr;
  kiln_status st = kiln_cache_open(cache.db().c_str(), &c);
  REQUIRE_MESSAGE(st == KILN_OK, kiln_status_name(st) << ": " << kiln_last_error());
  kiln_cache_close(c);
}

/// Loads through the harness Image (REQUIREs success), calls, closes.
int call(const Cache& cache, const std::string& name, const char* entry, int arg) {
  Image img(cache, name);
  return img.fn<I32Fn>(entry)(arg);
}

std::set<std::string> ls_names(const json& ls) {
  std::set<std::string> out;
  for (const json& n : ls.at("names"))
    out.insert(n.at("name").get<std::string>());
  return out;
}

std::set<std::string> ls_keys(const json& ls) {
  std::set<std::string> out;
  for (const json& jb : ls.at("jobs"))
    out.insert(jb.at("key").get<std::string>());
  return out;
}

/// Checks the shape of a gc --json answer and returns its evicted closures.
std::vector<std::string> check_gc(const json& g, bool dry_run) {
  INFO("gc: " << g.dump());
  REQUIRE(g.contains("dry_run"));
  CHECK(g["dry_run"].is_boolean());
  CHECK(g["dry_run"] == dry_run);
  REQUIRE(g.contains("evicted_closures"));
  REQUIRE(g["evicted_closures"].is_array());
  std::vector<std::string> out;
  for (const json& c : g["evicted_closures"]) {
    CHECK(is_hex32(c));
    if (c.is_string())
      out.push_back(c.get<std::string>());
  }
  CHECK(num(g, "evicted_jobs") >= 0);
  CHECK(num(g, "evicted_images") >= 0);
  CHECK(num(g, "bytes_before") >= 0);
  CHECK(num(g, "bytes_after") >= 0);
  return out;
}

void sleep_past_second() { std::this_thread::sleep_for(std::chrono::milliseconds(1100)); }

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  REQUIRE(out.good());
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

/// A job's edges as precompile reports them: (from, to, symbol).
using Edge = std::tuple<std::string, std::string, std::string>;

std::set<Edge> precompile_edges(const json& pre) {
  std::set<Edge> out;
  for (const json& jb : pre.at("jobs"))
    for (const auto& [symbol, child] : refs(jb))
      out.insert({jb.at("key").get<std::string>(), child, symbol});
  return out;
}

const char* const kComponents[] = {"module_hash", "entry",     "target",   "triple",   "cpu",
                                   "features",    "opt_level", "debug",    "toolchain"};

bool is_component(const std::string& c) {
  for (const char* k : kComponents)
    if (c == k)
      return true;
  return false;
}

} // namespace

TEST_SUITE("integration.lifecycle") {

// ---------------------------------------------------------------- ls / show

TEST_CASE("ls and show name every entry of nested, cyclic and diamond closures") {
  Cache cache;
  precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  precompile_ok(cache, {"--entry", "cyc_a", data("cycle.ll")});
  precompile_ok(cache, {"--entry", "dia_root", data("diamond.ll")});
  const std::map<std::string, std::vector<std::string>> members{
      {"nest_a", {"nest_a", "nest_b", "nest_c"}},
      {"cyc_a", {"cyc_a", "cyc_b", "cyc_c"}},
      {"dia_root", {"dia_root", "dia_l", "dia_r", "dia_s"}}};

  RunResult ls = inspect(cache, {"ls"});
  INFO("ls: " << describe(ls));
  REQUIRE(ls.exit_code == 0);
  for (const auto& [rootname, entries] : members)
    for (const std::string& e : entries)
      CHECK_MESSAGE(ls.out.find(e) != std::string::npos, "ls lacks " << e);

  json lj = inspect_json(cache, {"ls", "--json"});
  CHECK(lj["jobs"].size() == 10);
  CHECK(ls_names(lj) == std::set<std::string>{"nest_a", "cyc_a", "dia_root"});

  for (const auto& [rootname, entries] : members) {
    RunResult s = inspect(cache, {"show", rootname});
    INFO("show " << rootname << ": " << describe(s));
    REQUIRE(s.exit_code == 0);
    for (const std::string& e : entries)
      CHECK_MESSAGE(s.out.find(e) != std::string::npos, "show " << rootname << " lacks " << e);
    json sj = inspect_json(cache, {"show", rootname, "--json"});
    CHECK(sj["kind"] == "root");
    CHECK(sj["members"].size() == entries.size());
  }
}

// ---------------------------------------------------------------- stats

TEST_CASE("stats counts jobs, closures, images, names, sizes and targets") {
  Cache cache;
  json pre = precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  json s = stats(cache);
  INFO("stats: " << s.dump());
  CHECK(num(s, "jobs") == 3);
  CHECK(num(s, "closures") == 1);
  CHECK(num(s, "images") == 1);
  CHECK(num(s, "names") == 1);
  CHECK(num(s, "stored_bytes") > 0);
  CHECK(num(s, "raw_bytes") > 0);
  CHECK(num(s, "file_bytes") > 0);
  const double want_ratio = double(num(s, "stored_bytes")) / double(num(s, "raw_bytes"));
  CHECK(s["ratio"].get<double>() == doctest::Approx(want_ratio).epsilon(0.01));
  CHECK(s["targets"] == json{{"host", 3}});

  precompile_ok(cache, {"--entry", "dia_root", data("diamond.ll")});
  s = stats(cache);
  CHECK(num(s, "jobs") == 7);
  CHECK(num(s, "closures") == 2);
  CHECK(num(s, "images") == 2);
  CHECK(num(s, "names") == 2);
  CHECK(s["targets"] == json{{"host", 7}});
}

TEST_CASE("stats counts precompile hits and misses, loads, image hits and misses; --zero resets") {
  Cache cache;
  precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")}); // 3 compiled
  json s = stats(cache);
  CHECK(num(s, "job_misses") == 3);
  CHECK(num(s, "job_hits") == 0);
  CHECK(num(s, "loads") == 0);
  CHECK(num(s, "image_hits") == 0);
  CHECK(num(s, "image_misses") == 0);

  json again = precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")}); // 3 cached
  CHECK(statuses(again) == std::set<std::string>{"cached"});
  s = stats(cache);
  CHECK(num(s, "job_hits") == 3);
  CHECK(num(s, "job_misses") == 3);

  // A load of a linked image is an image hit, counted when the handle closes.
  CHECK(call(cache, "nest_a", "nest_a", 1) == 333);
  s = stats(cache);
  CHECK(num(s, "loads") == 1);
  CHECK(num(s, "image_hits") == 1);
  CHECK(num(s, "image_misses") == 0);

  // --no-link: the first load relinks (a miss) and stores the image; the next hits.
  precompile_ok(cache, {"--no-link", "--entry", "cyc_a", data("cycle.ll")});
  s = stats(cache);
  CHECK(num(s, "job_misses") == 6);
  CHECK(num(s, "images") == 1);
  CHECK(call(cache, "cyc_a", "cyc_a", 3) == 1111);
  s = stats(cache);
  CHECK(num(s, "loads") == 2);
  CHECK(num(s, "image_hits") == 1);
  CHECK(num(s, "image_misses") == 1);
  CHECK(num(s, "images") == 2);
  CHECK(call(cache, "cyc_a", "cyc_a", 4) == 2112);
  s = stats(cache);
  CHECK(num(s, "loads") == 3);
  CHECK(num(s, "image_hits") == 2);
  CHECK(num(s, "image_misses") == 1);

  // --zero resets hits, misses and loads, not the contents.
  json z = inspect_json(cache, {"stats", "--zero", "--json"});
  INFO("stats --zero: " << z.dump());
  CHECK(num(z, "jobs") == 6);
  for (const char* c : kCounters) // it prints the stats after the reset
    CHECK_MESSAGE(num(z, c) == 0, c << " in the output of --zero");
  s = stats(cache);
  for (const char* c : kCounters)
    CHECK_MESSAGE(num(s, c) == 0, c << " after --zero");
  CHECK(num(s, "jobs") == 6);
  CHECK(num(s, "closures") == 2);
  CHECK(num(s, "images") == 2);
  CHECK(num(s, "names") == 2);

  // Counting resumes after a reset.
  precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  s = stats(cache);
  CHECK(num(s, "job_hits") == 3);
  CHECK(num(s, "job_misses") == 0);
}

TEST_CASE("stats without --json is a table with jobs, closures, images and a ratio") {
  Cache cache;
  precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  RunResult r = inspect(cache, {"stats"});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  for (const char* word : {"jobs", "closures", "images"})
    CHECK_MESSAGE(r.out.find(word) != std::string::npos, "no \"" << word << "\"");
  CHECK((r.out.find("ratio") != std::string::npos ||
         r.out.find("compression") != std::string::npos));
  // Not JSON.
  CHECK(r.out.find('{') == std::string::npos);
}

// ---------------------------------------------------------------- graph

TEST_CASE("graph --json: every closure member is a node, every deferred ref an edge") {
  struct Unit {
    const char* file;
    const char* root;
    std::size_t nodes;
    std::size_t edges;
  };
  for (const Unit& u : {Unit{"nested.ll", "nest_a", 3, 2}, Unit{"cycle.ll", "cyc_a", 3, 3},
                        Unit{"diamond.ll", "dia_root", 4, 4},
                        Unit{"self_recursive.ll", "fact", 1, 1},
                        Unit{"chain8.ll", "chain0", 8, 7}}) {
    CAPTURE(u.file);
    Cache cache;
    json pre = precompile_ok(cache, {"--entry", u.root, data(u.file)});
    json g = inspect_json(cache, {"graph", u.root, "--json"});
    INFO("graph: " << g.dump());
    CHECK(g["closure"] == closure(pre, u.root));
    CHECK(g["root"] == key(pre, u.root));
    REQUIRE(g["nodes"].is_array());
    REQUIRE(g["edges"].is_array());
    CHECK(g["nodes"].size() == u.nodes);
    CHECK(g["edges"].size() == u.edges);

    std::map<std::string, std::string> symbol_of_node;
    std::set<std::string> node_keys;
    for (const json& n : g["nodes"]) {
      REQUIRE(is_hex32(n["key"]));
      REQUIRE(n["entry"].is_string());
      REQUIRE(n["symbol"].is_string());
      const std::string k = n["key"].get<std::string>();
      CHECK(node_keys.insert(k).second);
      CHECK(n["key"] == key(pre, n["entry"].get<std::string>()));
      symbol_of_node[k] = n["symbol"].get<std::string>();
    }
    CHECK(node_keys == keys(pre));

    std::set<Edge> got;
    for (const json& e : g["edges"]) {
      REQUIRE(is_hex32(e["from"]));
      REQUIRE(is_hex32(e["to"]));
      REQUIRE(e["symbol"].is_string());
      got.insert({e["from"].get<std::string>(), e["to"].get<std::string>(),
                  e["symbol"].get<std::string>()});
      // The edge's symbol is the symbol its target defines.
      CHECK(symbol_of_node[e["to"].get<std::string>()] == e["symbol"].get<std::string>());
    }
    CHECK(got == precompile_edges(pre));
  }
}

TEST_CASE("graph: a cycle and a self-reference show as edges") {
  {
    Cache cache;
    json pre = precompile_ok(cache, {"--entry", "cyc_a", data("cycle.ll")});
    json g = inspect_json(cache, {"graph", "cyc_a", "--json"});
    INFO("graph: " << g.dump());
    std::set<std::pair<std::string, std::string>> got;
    for (const json& e : g["edges"])
      got.insert({e["from"].get<std::string>(), e["to"].get<std::string>()});
    const std::string a = key(pre, "cyc_a"), b = key(pre, "cyc_b"), c = key(pre, "cyc_c");
    CHECK(got == std::set<std::pair<std::string, std::string>>{{a, b}, {b, c}, {c, a}});
  }
  {
    Cache cache;
    json pre = precompile_ok(cache, {"--entry", "fact", data("self_recursive.ll")});
    json g = inspect_json(cache, {"graph", "fact", "--json"});
    INFO("graph: " << g.dump());
    REQUIRE(g["edges"].size() == 1);
    CHECK(g["edges"][0]["from"] == key(pre, "fact"));
    CHECK(g["edges"][0]["to"] == key(pre, "fact"));
  }
}

TEST_CASE("graph by closure key and with --target host matches graph by name") {
  Cache cache;
  json pre = precompile_ok(cache, {"--entry", "dia_root", data("diamond.ll")});
  json by_name = inspect_json(cache, {"graph", "dia_root", "--json"});
  json by_key = inspect_json(cache, {"graph", closure(pre, "dia_root"), "--json"});
  json with_target = inspect_json(cache, {"graph", "dia_root", "--target", "host", "--json"});
  CHECK(by_key == by_name);
  CHECK(with_target == by_name);
}

TEST_CASE("graph of an unknown name fails with exit 1") {
  Cache cache;
  precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  for (const char* what : {"nosuch_name", "0123456789abcdef0123456789abcdef"}) {
    RunResult r = inspect(cache, {"graph", what, "--json"});
    INFO(what << ": " << describe(r));
    CHECK(r.exit_code == kExitNotFound);
    CHECK(!r.err.empty());
  }
}

TEST_CASE("graph --dot is Graphviz DOT with entry names and short keys") {
  Cache cache;
  json pre = precompile_ok(cache, {"--entry", "cyc_a", data("cycle.ll")});
  RunResult r = inspect(cache, {"graph", "cyc_a", "--dot"});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  const std::size_t start = r.out.find_first_not_of(" \t\r\n");
  REQUIRE(start != std::string::npos);
  CHECK(r.out.compare(start, 7, "digraph") == 0);
  for (const json& jb : pre["jobs"]) {
    const std::string e = jb["entry"].get<std::string>();
    const std::string k = jb["key"].get<std::string>();
    CHECK_MESSAGE(r.out.find(e) != std::string::npos, "DOT lacks entry " << e);
    CHECK_MESSAGE((r.out.find(k.substr(0, 6)) != std::string::npos ||
                   r.out.find(k.substr(k.size() - 6)) != std::string::npos),
                  "DOT lacks a short key of " << e << " (" << k << ")");
  }
  std::size_t arrows = 0;
  for (std::size_t p = r.out.find("->"); p != std::string::npos; p = r.out.find("->", p + 2))
    ++arrows;
  CHECK(arrows >= 3);

  if (!have("/usr/bin/dot")) {
    MESSAGE("skipping dot -Tsvg: /usr/bin/dot (graphviz) is not installed");
    return;
  }
  TempDir tmp;
  write_file(tmp.path() / "g.dot", r.out);
  RunResult svg = run({"/usr/bin/dot", "-Tsvg", (tmp.path() / "g.dot").string()});
  INFO("dot -Tsvg: " << describe(svg));
  CHECK(svg.exit_code == 0);
  CHECK(svg.out.find("<svg") != std::string::npos);
}

// ---------------------------------------------------------------- verify

TEST_CASE("verify: a healthy cache is ok with no problems") {
  Cache cache;
  precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  precompile_ok(cache, {"--entry", "cyc_a", data("cycle.ll")});
  precompile_ok(cache, {"--no-link", "--entry", "dia_root", data("diamond.ll")});
  json v = inspect_json(cache, {"verify", "--json"});
  INFO("verify: " << v.dump());
  CHECK(v["ok"] == true);
  CHECK(v["problems"] == json::array());
  RunResult human = inspect(cache, {"verify"});
  INFO(describe(human));
  CHECK(human.exit_code == 0);
}

TEST_CASE("verify names a job whose artifact fails its checksum or does not decompress") {
  if (!have("/usr/bin/sqlite3")) {
    MESSAGE("skipping: /usr/bin/sqlite3 is not installed");
    return;
  }
  const char* const damages[] = {
      "UPDATE artifacts SET checksum = ~checksum WHERE job_key = '%s'",
      "UPDATE artifacts SET data = zeroblob(64) WHERE job_key = '%s'"};
  for (const char* damage : damages) {
    CAPTURE(damage);
    Cache cache;
    json pre = precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
    const std::string victim = key(pre, "nest_c");
    std::string stmt = damage;
    stmt.replace(stmt.find("%s"), 2, victim);
    sql(cache, stmt);

    json v = inspect_json(cache, {"verify", "--json"}, kExitNotFound);
    INFO("verify: " << v.dump());
    CHECK(v["ok"] == false);
    REQUIRE(v["problems"].is_array());
    REQUIRE(!v["problems"].empty());
    bool named = false;
    for (const json& p : v["problems"]) {
      REQUIRE(p["kind"].is_string());
      REQUIRE(p["key"].is_string());
      REQUIRE(p["message"].is_string());
      CHECK(!p["message"].get<std::string>().empty());
      named |= p["key"] == victim;
      // The healthy jobs are not blamed (the closure holding the damaged job may be).
      CHECK(p["key"] != key(pre, "nest_a"));
      CHECK(p["key"] != key(pre, "nest_b"));
    }
    CHECK_MESSAGE(named, "no problem names the damaged job " << victim);

    RunResult human = inspect(cache, {"verify"});
    INFO(describe(human));
    CHECK(human.exit_code == kExitNotFound);
    CHECK((human.out + human.err).find(victim) != std::string::npos);
  }
}

TEST_CASE("verify names the closure whose stored image is damaged") {
  if (!have("/usr/bin/sqlite3")) {
    MESSAGE("skipping: /usr/bin/sqlite3 is not installed");
    return;
  }
  Cache cache;
  json pre = precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  json other = precompile_ok(cache, {"--entry", "cyc_a", data("cycle.ll")});
  const std::string victim = closure(pre, "nest_a");
  sql(cache, "UPDATE images SET data = zeroblob(100) WHERE closure_key = '" + victim + "'");

  json v = inspect_json(cache, {"verify", "--json"}, kExitNotFound);
  INFO("verify: " << v.dump());
  CHECK(v["ok"] == false);
  REQUIRE(v["problems"].is_array());
  bool named = false;
  for (const json& p : v["problems"]) {
    REQUIRE(p["kind"].is_string());
    REQUIRE(p["key"].is_string());
    REQUIRE(p["message"].is_string());
    named |= p["key"] == victim;
    CHECK(p["key"] != closure(other, "cyc_a"));
  }
  CHECK_MESSAGE(named, "no problem names the closure " << victim);
}

// ---------------------------------------------------------------- gc

TEST_CASE("gc --max-size evicts least recently used closures; the most recent stays loadable") {
  Cache cache;
  // Recency has 1-second resolution: nest_a, cyc_a, dia_root, chain0 in that
  // order, then a load of nest_a makes it the most recent.
  json nested = precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  sleep_past_second();
  json cycle = precompile_ok(cache, {"--entry", "cyc_a", data("cycle.ll")});
  sleep_past_second();
  json diamond = precompile_ok(cache, {"--entry", "dia_root", data("diamond.ll")});
  sleep_past_second();
  json chain = precompile_ok(cache, {"--entry", "chain0", data("chain8.ll")});
  sleep_past_second();
  CHECK(call(cache, "nest_a", "nest_a", 1) == 333);

  // Least recently used first.
  struct Root {
    std::string name, closure;
    std::size_t jobs;
  };
  const std::vector<Root> lru{{"cyc_a", closure(cycle, "cyc_a"), 3},
                              {"dia_root", closure(diamond, "dia_root"), 4},
                              {"chain0", closure(chain, "chain0"), 8},
                              {"nest_a", closure(nested, "nest_a"), 3}};

  json dry0 = inspect_json(cache, {"gc", "--max-size", "0", "--dry-run", "--json"});
  CHECK(check_gc(dry0, true).size() == lru.size());
  const std::int64_t before = num(dry0, "bytes_before");
  REQUIRE(before > 0);

  // Find a limit that evicts some but not all (asking the dry run).
  std::optional<std::int64_t> limit;
  for (double f : {0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2}) {
    const auto candidate = static_cast<std::int64_t>(double(before) * f);
    json d = inspect_json(cache, {"gc", "--max-size", std::to_string(candidate), "--dry-run",
                                  "--json"});
    const std::vector<std::string> ev = check_gc(d, true);
    const bool keeps_recent =
        std::find(ev.begin(), ev.end(), lru.back().closure) == ev.end();
    if (!ev.empty() && keeps_recent) {
      limit = candidate;
      break;
    }
  }
  REQUIRE_MESSAGE(limit.has_value(),
                  "no --max-size between 20% and 90% of bytes_before=" << before
                                                                       << " evicts some but not all");

  json ls_before = inspect_json(cache, {"ls", "--json"});
  json g = inspect_json(cache, {"gc", "--max-size", std::to_string(*limit), "--json"});
  INFO("gc --max-size " << *limit << ": " << g.dump());
  const std::vector<std::string> evicted = check_gc(g, false);
  REQUIRE(!evicted.empty());
  REQUIRE(evicted.size() < lru.size());
  // The evicted closures are the least recently used ones, oldest first.
  std::set<std::string> evicted_set(evicted.begin(), evicted.end());
  CHECK(evicted_set.size() == evicted.size());
  std::size_t want_jobs = 0;
  for (std::size_t i = 0; i < lru.size(); ++i) {
    const bool gone = evicted_set.count(lru[i].closure) == 1;
    CHECK_MESSAGE(gone == (i < evicted.size()),
                  lru[i].name << (gone ? " evicted" : " kept") << " out of LRU order");
    if (gone)
      want_jobs += lru[i].jobs;
  }
  CHECK(num(g, "evicted_jobs") == static_cast<std::int64_t>(want_jobs));
  CHECK(num(g, "evicted_images") == static_cast<std::int64_t>(evicted.size()));
  CHECK(num(g, "bytes_before") >= num(g, "bytes_after"));
  CHECK(num(g, "bytes_after") <= *limit);

  json ls = inspect_json(cache, {"ls", "--json"});
  INFO("ls after gc: " << ls.dump());
  const std::set<std::string> names = ls_names(ls);
  for (const Root& r : lru)
    CHECK_MESSAGE(names.count(r.name) == (evicted_set.count(r.closure) ? 0u : 1u),
                  "name " << r.name);
  CHECK(ls["jobs"].size() == ls_before["jobs"].size() - want_jobs);
  CHECK(num(stats(cache), "closures") == static_cast<std::int64_t>(lru.size() - evicted.size()));

  CHECK(call(cache, "nest_a", "nest_a", 1) == 333);
  for (const Root& r : lru)
    if (evicted_set.count(r.closure)) {
      std::string why;
      CHECK_MESSAGE(!try_call(cache.db(), r.name, r.name.c_str(), 0, &why).has_value(),
                    "evicted root " << r.name << " still loads");
    }
  json v = inspect_json(cache, {"verify", "--json"});
  CHECK(v["ok"] == true);
}

TEST_CASE("gc --max-size 0 evicts everything; --dry-run changes nothing") {
  Cache cache;
  json n = precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  json c = precompile_ok(cache, {"--entry", "cyc_a", data("cycle.ll")});
  json d = precompile_ok(cache, {"--entry", "dia_root", data("diamond.ll")});
  const std::set<std::string> all{closure(n, "nest_a"), closure(c, "cyc_a"),
                                  closure(d, "dia_root")};

  RunResult ls0 = inspect(cache, {"ls", "--json"});
  REQUIRE(ls0.exit_code == 0);
  json dry = inspect_json(cache, {"gc", "--max-size", "0", "--dry-run", "--json"});
  const std::vector<std::string> dry_ev = check_gc(dry, true);
  CHECK(std::set<std::string>(dry_ev.begin(), dry_ev.end()) == all);
  CHECK(num(dry, "evicted_jobs") == 10);
  RunResult ls1 = inspect(cache, {"ls", "--json"});
  CHECK(ls1.out == ls0.out);
  CHECK(num(stats(cache), "closures") == 3);

  json g = inspect_json(cache, {"gc", "--max-size", "0", "--json"});
  const std::vector<std::string> ev = check_gc(g, false);
  CHECK(std::set<std::string>(ev.begin(), ev.end()) == all);
  CHECK(num(g, "evicted_jobs") == 10);
  CHECK(num(g, "evicted_images") == 3);
  CHECK(num(g, "bytes_after") <= num(g, "bytes_before"));

  json ls = inspect_json(cache, {"ls", "--json"});
  CHECK(ls["jobs"].empty());
  CHECK(ls["names"].empty());
  json s = stats(cache);
  CHECK(num(s, "jobs") == 0);
  CHECK(num(s, "closures") == 0);
  CHECK(num(s, "images") == 0);
  CHECK(num(s, "names") == 0);
  CHECK(inspect_json(cache, {"verify", "--json"})["ok"] == true);
  CHECK(!try_call(cache.db(), "nest_a", "nest_a", 1).has_value());

  // The cache is usable again afterwards.
  precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  CHECK(call(cache, "nest_a", "nest_a", 1) == 333);
}

TEST_CASE("gc --older-than evicts closures unused for longer; shared jobs stay") {
  Cache cache;
  // Three closures: nest_a {a, b, c}, nest_b {b, c}, nest_c {c}.
  json pre = precompile_ok(cache, {data("nested.ll")});
  REQUIRE(root_names(pre) == std::set<std::string>{"nest_a", "nest_b", "nest_c"});
  std::this_thread::sleep_for(std::chrono::milliseconds(3100));
  CHECK(call(cache, "nest_b", "nest_b", 1) == 33);
  CHECK(call(cache, "nest_c", "nest_c", 1) == 3);

  for (const char* age : {"7d", "2h", "10m", "30s"}) {
    json dry = inspect_json(cache, {"gc", "--older-than", age, "--dry-run", "--json"});
    INFO("--older-than " << age << ": " << dry.dump());
    CHECK(check_gc(dry, true).empty());
  }

  json g = inspect_json(cache, {"gc", "--older-than", "2s", "--json"});
  INFO("gc --older-than 2s: " << g.dump());
  const std::vector<std::string> ev = check_gc(g, false);
  CHECK(ev == std::vector<std::string>{closure(pre, "nest_a")});
  CHECK(num(g, "evicted_jobs") == 1); // nest_b and nest_c are still members of kept closures
  CHECK(num(g, "evicted_images") == 1);

  json ls = inspect_json(cache, {"ls", "--json"});
  CHECK(ls_names(ls) == std::set<std::string>{"nest_b", "nest_c"});
  CHECK(ls_keys(ls) == std::set<std::string>{key(pre, "nest_b"), key(pre, "nest_c")});
  CHECK(call(cache, "nest_b", "nest_b", 1) == 33);
  CHECK(inspect_json(cache, {"verify", "--json"})["ok"] == true);
}

TEST_CASE("gc and config reject malformed sizes and durations with exit 2") {
  Cache cache;
  precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  RunResult ls0 = inspect(cache, {"ls", "--json"});
  const std::vector<std::vector<std::string>> bad{
      {"gc", "--max-size", "abc", "--json"},   {"gc", "--max-size", "12Q", "--json"},
      {"gc", "--max-size", "-5", "--json"},    {"gc", "--older-than", "5x", "--json"},
      {"gc", "--older-than", "abc", "--json"}, {"config", "max_size", "lots"}};
  for (const auto& args : bad) {
    RunResult r = inspect(cache, args);
    INFO(args[0] << " " << args[1] << " " << args[2] << ": " << describe(r));
    CHECK(r.exit_code == kExitUsage);
    CHECK(!r.err.empty());
  }
  CHECK(inspect(cache, {"ls", "--json"}).out == ls0.out);
  // Accepted forms.
  for (const char* size : {"64K", "10M", "1G", "100000"})
    CHECK(inspect(cache, {"gc", "--max-size", size, "--dry-run", "--json"}).exit_code == 0);
  for (const char* age : {"30s", "10m", "2h", "7d"})
    CHECK(inspect(cache, {"gc", "--older-than", age, "--dry-run", "--json"}).exit_code == 0);
}

// ---------------------------------------------------------------- export / import

TEST_CASE("export and import carry roots to another cache that loads them") {
  Cache a;
  json n = precompile_ok(a, {"--entry", "nest_a", data("nested.ll")});
  json c = precompile_ok(a, {"--entry", "cyc_a", data("cycle.ll")});
  TempDir tmp;
  const fs::path bundle = tmp.path() / "all.kiln";
  RunResult ex = inspect(a, {"export", bundle.string()});
  INFO("export: " << describe(ex));
  REQUIRE(ex.exit_code == 0);
  REQUIRE(fs::exists(bundle));
  CHECK(fs::file_size(bundle) > 0);

  Cache b;
  make_empty(b);
  json im = inspect_json(b, {"import", bundle.string(), "--json"});
  INFO("import: " << im.dump());
  CHECK(num(im, "closures") == 2);
  CHECK(num(im, "jobs") == 6);
  CHECK(num(im, "names") == 2);
  CHECK(num(im, "images") >= 0);
  CHECK(num(im, "images") <= 2);

  CHECK(call(b, "nest_a", "nest_a", 1) == 333);
  CHECK(call(b, "cyc_a", "cyc_a", 3) == 1111);
  CHECK(inspect_json(b, {"verify", "--json"})["ok"] == true);

  json la = inspect_json(a, {"ls", "--json"});
  json lb = inspect_json(b, {"ls", "--json"});
  CHECK(ls_keys(lb) == ls_keys(la));
  CHECK(ls_names(lb) == ls_names(la));
  for (const json& nm : lb["names"]) {
    const std::string name = nm["name"].get<std::string>();
    CHECK(nm["closure"] == (name == "nest_a" ? closure(n, "nest_a") : closure(c, "cyc_a")));
  }

  // Importing the same bundle again changes nothing.
  RunResult before = inspect(b, {"ls", "--json"});
  RunResult again = inspect(b, {"import", bundle.string(), "--json"});
  INFO("re-import: " << describe(again));
  CHECK(again.exit_code == 0);
  CHECK(inspect(b, {"ls", "--json"}).out == before.out);
  CHECK(num(stats(b), "closures") == 2);
  CHECK(call(b, "nest_a", "nest_a", 2) == 336);
}

TEST_CASE("export of named roots carries only their closures") {
  Cache a;
  precompile_ok(a, {"--entry", "nest_a", data("nested.ll")});
  precompile_ok(a, {"--entry", "cyc_a", data("cycle.ll")});
  precompile_ok(a, {"--entry", "dia_root", data("diamond.ll")});
  TempDir tmp;
  const fs::path bundle = tmp.path() / "some.kiln";
  RunResult ex = inspect(a, {"export", bundle.string(), "nest_a", "dia_root", "--json"});
  INFO("export: " << describe(ex));
  REQUIRE(ex.exit_code == 0);

  Cache b; // no cache file yet: import creates it
  json im = inspect_json(b, {"import", bundle.string(), "--json"});
  INFO("import: " << im.dump());
  CHECK(num(im, "closures") == 2);
  CHECK(num(im, "jobs") == 7);
  CHECK(num(im, "names") == 2);
  CHECK(ls_names(inspect_json(b, {"ls", "--json"})) ==
        std::set<std::string>{"nest_a", "dia_root"});
  CHECK(call(b, "dia_root", "dia_root", 5) == 1026);

  // A root by closure key.
  const std::string nest_closure =
      inspect_json(a, {"show", "nest_a", "--json"})["closure"].get<std::string>();
  const fs::path by_key = tmp.path() / "by-key.kiln";
  RunResult ek = inspect(a, {"export", by_key.string(), nest_closure});
  INFO("export by closure key: " << describe(ek));
  REQUIRE(ek.exit_code == 0);
  Cache c;
  make_empty(c);
  json ik = inspect_json(c, {"import", by_key.string(), "--json"});
  INFO("import by-key bundle: " << ik.dump());
  CHECK(num(ik, "closures") == 1);
  CHECK(num(ik, "jobs") == 3);
  CHECK(call(c, nest_closure, "nest_a", 1) == 333);

  RunResult missing = inspect(a, {"export", (tmp.path() / "x.kiln").string(), "nosuch_name"});
  INFO("export nosuch_name: " << describe(missing));
  CHECK(missing.exit_code == kExitNotFound);
}

TEST_CASE("import of a damaged, truncated or foreign file fails and changes nothing") {
  Cache a;
  precompile_ok(a, {"--entry", "nest_a", data("nested.ll")});
  precompile_ok(a, {"--entry", "chain0", data("chain8.ll")});
  TempDir tmp;
  const fs::path bundle = tmp.path() / "good.kiln";
  REQUIRE(inspect(a, {"export", bundle.string()}).exit_code == 0);
  const std::string good = slurp(bundle);
  REQUIRE(good.size() > 16);

  std::string flipped = good;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0xff);
  write_file(tmp.path() / "flipped.kiln", flipped);
  write_file(tmp.path() / "truncated.kiln", good.substr(0, good.size() / 2));
  write_file(tmp.path() / "short.kiln", good.substr(0, 8));
  write_file(tmp.path() / "empty.kiln", "");
  write_file(tmp.path() / "text.kiln", slurp(data("nested.ll")));

  // One cache with other content, one that already holds the bundle's roots.
  Cache other;
  precompile_ok(other, {"--entry", "dia_root", data("diamond.ll")});
  Cache same;
  make_empty(same);
  REQUIRE(inspect(same, {"import", bundle.string()}).exit_code == 0);

  for (const Cache* target : {&other, &same}) {
    const std::string ls0 = inspect(*target, {"ls", "--json"}).out;
    for (const char* bad : {"flipped.kiln", "truncated.kiln", "short.kiln", "empty.kiln",
                            "text.kiln", "does-not-exist.kiln"}) {
      RunResult r = inspect(*target, {"import", (tmp.path() / bad).string(), "--json"});
      INFO("import " << bad << ": " << describe(r));
      CHECK(r.exit_code != 0);
      CHECK(!r.err.empty());
      CHECK(inspect(*target, {"ls", "--json"}).out == ls0);
    }
    CHECK(inspect_json(*target, {"verify", "--json"})["ok"] == true);
  }
  CHECK(call(other, "dia_root", "dia_root", 5) == 1026);
}

// ---------------------------------------------------------------- explain

TEST_CASE("explain: -O 2 and -O 3 keys differ only in opt_level") {
  Cache cache;
  json o2 = precompile_ok(cache, {"-O", "2", "--entry", "nest_a", data("nested.ll")});
  json o3 = precompile_ok(cache, {"-O", "3", "--entry", "nest_a", data("nested.ll")});
  const std::string k2 = key(o2, "nest_a"), k3 = key(o3, "nest_a");
  REQUIRE(k2 != k3);

  json e = inspect_json(cache, {"explain", k2, k3, "--json"});
  INFO("explain: " << e.dump());
  CHECK(e["same"] == false);
  REQUIRE(e["differences"].is_array());
  REQUIRE(e["differences"].size() == 1);
  CHECK(e["differences"][0]["component"] == "opt_level");
  CHECK(e["differences"][0]["a"] == "2");
  CHECK(e["differences"][0]["b"] == "3");

  RunResult human = inspect(cache, {"explain", k2, k3});
  INFO(describe(human));
  CHECK(human.exit_code == 0);
  CHECK(human.out.find("opt_level") != std::string::npos);
}

TEST_CASE("explain: a key against itself is the same; different entries differ") {
  Cache cache;
  json pre = precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  const std::string ka = key(pre, "nest_a"), kb = key(pre, "nest_b");
  json same = inspect_json(cache, {"explain", ka, ka, "--json"});
  INFO("explain same: " << same.dump());
  CHECK(same["same"] == true);
  CHECK(same["differences"] == json::array());

  json diff = inspect_json(cache, {"explain", ka, kb, "--json"});
  INFO("explain a b: " << diff.dump());
  CHECK(diff["same"] == false);
  std::set<std::string> comps;
  for (const json& d : diff["differences"]) {
    REQUIRE(d["component"].is_string());
    CHECK(d.contains("a"));
    CHECK(d.contains("b"));
    CHECK(is_component(d["component"].get<std::string>()));
    comps.insert(d["component"].get<std::string>());
  }
  CHECK(comps.count("entry") == 1);
  CHECK(comps.count("module_hash") == 1);
  CHECK(comps.count("opt_level") == 0);
  CHECK(comps.count("target") == 0);

  RunResult r = inspect(cache, {"explain", ka, "0123456789abcdef0123456789abcdef", "--json"});
  INFO("explain unknown: " << describe(r));
  CHECK(r.exit_code == kExitNotFound);
}

TEST_CASE("kiln-precompile --explain --json gives each job's key components") {
  Cache cache;
  json o2 = precompile_ok(cache, {"--explain", "-O", "2", "--entry", "nest_a", data("nested.ll")});
  json o3 = precompile_ok(cache, {"--explain", "-O", "3", "--entry", "nest_a", data("nested.ll")});
  for (const json* pre : {&o2, &o3})
    for (const json& jb : (*pre)["jobs"]) {
      INFO("job: " << jb.dump());
      REQUIRE(jb.contains("components"));
      REQUIRE(jb["components"].is_object());
      for (const char* c : kComponents)
        CHECK_MESSAGE(jb["components"].contains(c), "no component " << c);
      CHECK(jb["components"]["entry"] == jb["entry"]);
    }
  // The same jobs at -O 2 and -O 3: components differ in opt_level only.
  for (const char* entry : {"nest_a", "nest_b", "nest_c"}) {
    CAPTURE(entry);
    const json& c2 = job(o2, entry)["components"];
    const json& c3 = job(o3, entry)["components"];
    for (const char* c : kComponents) {
      CAPTURE(c);
      if (std::string(c) == "opt_level")
        CHECK(c2[c] != c3[c]);
      else
        CHECK(c2[c] == c3[c]);
    }
  }
  CHECK(job(o2, "nest_a")["components"]["module_hash"] !=
        job(o2, "nest_b")["components"]["module_hash"]);
}

// ---------------------------------------------------------------- config / size limit

TEST_CASE("config max_size is stored, reported by stats, and overridden by the environment") {
  Cache cache;
  precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  json c0 = inspect_json(cache, {"config", "--json"});
  INFO("config: " << c0.dump());
  CHECK(num(c0, "max_size") >= 0);

  RunResult set = inspect(cache, {"config", "max_size", "1M"});
  INFO("config max_size 1M: " << describe(set));
  REQUIRE(set.exit_code == 0);
  CHECK(num(inspect_json(cache, {"config", "--json"}), "max_size") == 1048576);
  CHECK(num(stats(cache), "max_size") == 1048576);

  RunResult get = inspect(cache, {"config", "max_size"});
  INFO("config max_size: " << describe(get));
  CHECK(get.exit_code == 0);
  CHECK(!get.out.empty());

  RunResult human = inspect(cache, {"config"});
  INFO("config: " << describe(human));
  CHECK(human.exit_code == 0);
  CHECK(human.out.find("max_size") != std::string::npos);

  REQUIRE(inspect(cache, {"config", "max_size", "64K"}).exit_code == 0);
  CHECK(num(stats(cache), "max_size") == 65536);
  REQUIRE(inspect(cache, {"config", "max_size", "2G"}).exit_code == 0);
  CHECK(num(stats(cache), "max_size") == 2147483648LL);
  REQUIRE(inspect(cache, {"config", "max_size", "1M"}).exit_code == 0);

  // The environment wins for that process only.
  RunResult env = run({"/usr/bin/env", "KILN_CACHE_MAX_SIZE=2097152", inspect_bin().string(),
                       "--cache", cache.db().string(), "stats", "--json"});
  INFO("stats with KILN_CACHE_MAX_SIZE: " << describe(env));
  REQUIRE(env.exit_code == 0);
  json es;
  REQUIRE_NOTHROW(es = json::parse(env.out));
  CHECK(num(es, "max_size") == 2097152);
  CHECK(num(stats(cache), "max_size") == 1048576);

  RunResult unknown = inspect(cache, {"config", "no_such_setting", "1"});
  INFO("config no_such_setting: " << describe(unknown));
  CHECK(unknown.exit_code != 0);
}

TEST_CASE("with max_size set, precompile keeps the cache near the limit; the newest roots load") {
  Cache cache;
  precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")}); // creates the cache
  REQUIRE(inspect(cache, {"config", "max_size", "64K"}).exit_code == 0);
  constexpr std::int64_t kLimit = 64 * 1024;

  const char* const units[] = {"nested.ll",       "cycle.ll",           "diamond.ll",
                               "chain8.ll",       "self_recursive.ll",  "helper.ll",
                               "global_shared.ll", "direct_and_deferred.ll"};
  std::size_t roots_total = 1;
  json last;
  for (const char* opt : {"0", "1", "3"})
    for (const char* unit : units) {
      CAPTURE(opt);
      CAPTURE(unit);
      last = precompile_ok(cache, {"-O", opt, data(unit)});
      roots_total += last["roots"].size();
      json s = stats(cache);
      INFO("stats: " << s.dump());
      CHECK(num(s, "file_bytes") <= 4 * kLimit);
      CHECK(num(s, "max_size") == kLimit);
    }
  json s = stats(cache);
  INFO("final stats: " << s.dump() << ", roots precompiled: " << roots_total);
  CHECK(num(s, "closures") < static_cast<std::int64_t>(roots_total));
  // The last precompile was direct_and_deferred.ll at -O 3: its roots load.
  CHECK(call(cache, "dd_root", "dd_root", 1) == 8017);
  CHECK(call(cache, "dd_f", "dd_f", 1) == 8);
  CHECK(inspect_json(cache, {"verify", "--json"})["ok"] == true);
}

// ---------------------------------------------------------------- relocation

TEST_CASE("a cache file copied elsewhere under another name still loads") {
  Cache cache;
  json pre = precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  precompile_ok(cache, {"--no-link", "--entry", "dia_root", data("diamond.ll")});
  TempDir elsewhere;
  fs::create_directories(elsewhere.path() / "deep" / "er");
  const fs::path moved = elsewhere.path() / "deep" / "er" / "moved-cache.sqlite";
  fs::copy_file(cache.db(), moved);

  std::string why;
  std::optional<int> v = try_call(moved, "nest_a", "nest_a", 1, &why);
  CHECK_MESSAGE(v.has_value(), "load from the copy failed: " << why);
  if (v)
    CHECK(*v == 333);
  // By closure key too, and a root whose image is linked on first load.
  v = try_call(moved, closure(pre, "nest_a"), "nest_a", 2, &why);
  CHECK_MESSAGE(v.has_value(), "load by closure key from the copy failed: " << why);
  if (v)
    CHECK(*v == 336);
  v = try_call(moved, "dia_root", "dia_root", 5, &why);
  CHECK_MESSAGE(v.has_value(), "relinking load from the copy failed: " << why);
  if (v)
    CHECK(*v == 1026);

  RunResult verify = inspect_at(moved, {"verify", "--json"});
  INFO("verify copy: " << describe(verify));
  CHECK(verify.exit_code == 0);
  RunResult ls = inspect_at(moved, {"ls", "--json"});
  REQUIRE(ls.exit_code == 0);
  CHECK(ls_names(json::parse(ls.out)) == std::set<std::string>{"nest_a", "dia_root"});
}

TEST_CASE("ls --target and --name filter jobs and names") {
  Cache cache;
  precompile_ok(cache, {data("nested.ll")});
  precompile_ok(cache, {data("cycle.ll")});
  RunResult r = inspect(cache, {"ls", "--name", "nest_*", "--json"});
  REQUIRE_MESSAGE(r.exit_code == 0, describe(r));
  json j = json::parse(r.out);
  std::set<std::string> names, entries;
  for (const json& n : j.at("names"))
    names.insert(n.at("name").get<std::string>());
  for (const json& job : j.at("jobs"))
    entries.insert(job.at("entry").get<std::string>());
  CHECK(names == std::set<std::string>{"nest_a", "nest_b", "nest_c"});
  CHECK(entries == std::set<std::string>{"nest_a", "nest_b", "nest_c"});
  RunResult none = inspect(cache, {"ls", "--target", "sm_90", "--json"});
  REQUIRE_MESSAGE(none.exit_code == 0, describe(none));
  CHECK(json::parse(none.out).at("jobs").empty());
  CHECK(json::parse(none.out).at("names").empty());
  RunResult host = inspect(cache, {"ls", "--target", "host", "--json"});
  CHECK(json::parse(host.out).at("jobs").size() == 6);
}

} // TEST_SUITE
