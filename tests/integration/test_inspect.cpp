// kiln-inspect's read commands give back what kiln-precompile stored: `ls`
// lists the same jobs, references and names (filtered by target or name
// glob); `show` resolves a job key, a closure key or a root name; `stats`
// counts contents, sizes, hits, misses and loads (and --zero resets the
// counters); `graph` draws a root's deferred references (JSON and DOT).
#include "inspect_helpers.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <set>
#include <tuple>

using namespace kiln_it;

namespace {

const char* const kCounters[] = {"job_hits", "job_misses", "image_hits", "image_misses", "loads"};

/// A job's edges as precompile reports them: (from, to, symbol).
using Edge = std::tuple<std::string, std::string, std::string>;

std::set<Edge> precompile_edges(const json& pre) {
  std::set<Edge> out;
  for (const json& jb : pre.at("jobs"))
    for (const auto& [symbol, child] : refs(jb))
      out.insert({jb.at("key").get<std::string>(), child, symbol});
  return out;
}

void check_artifacts(const json& artifacts) {
  INFO("artifacts: " << artifacts.dump());
  REQUIRE(artifacts.is_array());
  CHECK(!artifacts.empty());
  for (const json& a : artifacts) {
    CHECK(a["format"].is_string());
    REQUIRE(a["raw_size"].is_number_integer());
    REQUIRE(a["stored_size"].is_number_integer());
    CHECK(a["raw_size"].get<long long>() > 0);
    CHECK(a["stored_size"].get<long long>() > 0);
  }
}

} // namespace

TEST_SUITE_BEGIN("integration.inspect");

TEST_CASE("ls --json lists the precompiled jobs, their references and the root") {
  Cache cache;
  json pre = precompile_ok(cache, {"--entry", "dia_root", data("diamond.ll")});
  json ls = inspect_json(cache, {"ls", "--json"});
  INFO("ls: " << ls.dump());
  REQUIRE(ls["jobs"].is_array());
  REQUIRE(ls["names"].is_array());

  std::map<std::string, std::string> entry_of_key;
  for (const json& jb : pre["jobs"])
    entry_of_key[jb["key"].get<std::string>()] = jb["entry"].get<std::string>();

  CHECK(ls["jobs"].size() == pre["jobs"].size());
  for (const json& jb : ls["jobs"]) {
    INFO("ls job: " << jb.dump());
    REQUIRE(is_hex32(jb["key"]));
    const std::string k = jb["key"].get<std::string>();
    REQUIRE(entry_of_key.count(k) == 1);
    CHECK(jb["entry"] == entry_of_key[k]);
    CHECK(jb["target"] == job(pre, entry_of_key[k])["target"]);
    CHECK(jb.contains("options"));
    check_artifacts(jb["artifacts"]);
    // ls names each reference's child by entry; precompile gave its key.
    std::map<std::string, std::string> want;
    for (const auto& [symbol, child] : refs(job(pre, entry_of_key[k])))
      want[symbol] = entry_of_key[child];
    std::map<std::string, std::string> got;
    REQUIRE(jb["refs"].is_array());
    for (const json& ref : jb["refs"])
      got[ref["symbol"].get<std::string>()] = ref["entry"].get<std::string>();
    CHECK(got == want);
  }

  REQUIRE(ls["names"].size() == 1);
  CHECK(ls["names"][0]["name"] == "dia_root");
  CHECK(ls["names"][0]["target"] == root(pre, "dia_root")["target"]);
  CHECK(ls["names"][0]["closure"] == closure(pre, "dia_root"));
}

TEST_CASE("show KEY --json describes one job") {
  Cache cache;
  json pre = precompile_ok(cache, {"--entry", "dia_root", data("diamond.ll")});
  for (const json& jb : pre["jobs"]) {
    const std::string k = jb["key"].get<std::string>();
    json s = inspect_json(cache, {"show", k, "--json"});
    INFO("show " << k << ": " << s.dump());
    CHECK(s["kind"] == "job");
    CHECK(s["key"] == k);
    CHECK(s["entry"] == jb["entry"]);
    CHECK(s["target"] == jb["target"]);
    CHECK(s.contains("options"));
    CHECK(s.contains("toolchain"));
    CHECK(s["module_hash"].is_string());
    CHECK(!s["module_hash"].get<std::string>().empty());
    CHECK(s["symbol"].is_string());
    check_artifacts(s["artifacts"]);
    REQUIRE(s["refs"].is_array());
    CHECK(s["refs"].size() == jb["refs"].size());
  }
  // The module hash is the hash of the job's code: four functions, four hashes.
  std::set<std::string> hashes;
  for (const json& jb : pre["jobs"])
    hashes.insert(
        inspect_json(cache, {"show", jb["key"].get<std::string>(), "--json"})["module_hash"]
            .dump());
  CHECK(hashes.size() == 4);
}

TEST_CASE("show ROOT --json lists the closure's members") {
  Cache cache;
  json pre = precompile_ok(cache, {"--entry", "dia_root", data("diamond.ll")});
  json s = inspect_json(cache, {"show", "dia_root", "--json"});
  INFO("show dia_root: " << s.dump());
  CHECK(s["kind"] == "root");
  CHECK(s["name"] == "dia_root");
  CHECK(s["closure"] == closure(pre, "dia_root"));
  REQUIRE(s["members"].is_array());
  CHECK(s["members"].size() == 4); // dia_s once, though reached twice

  std::set<std::string> member_keys;
  std::map<std::string, std::string> key_of_symbol;
  for (const json& m : s["members"]) {
    REQUIRE(is_hex32(m["key"]));
    member_keys.insert(m["key"].get<std::string>());
    CHECK(m["key"] == key(pre, m["entry"].get<std::string>()));
    if (m["symbol"].is_string())
      key_of_symbol[m["symbol"].get<std::string>()] = m["key"].get<std::string>();
  }
  CHECK(member_keys == keys(pre));
  // Each deferred symbol of the closure resolves to the job precompile named.
  for (const json& jb : pre["jobs"])
    for (const auto& [symbol, child] : refs(jb)) {
      INFO("symbol " << symbol);
      REQUIRE(key_of_symbol.count(symbol) == 1);
      CHECK(key_of_symbol[symbol] == child);
    }
}

TEST_CASE("show ROOT follows the latest precompile of that name") {
  Cache cache;
  precompile_ok(cache, {"--entry", "chg_parent", data("change_v1.ll")});
  json v2 = precompile_ok(cache, {"--entry", "chg_parent", data("change_v2.ll")});
  json s = inspect_json(cache, {"show", "chg_parent", "--json"});
  INFO("show chg_parent: " << s.dump());
  CHECK(s["closure"] == closure(v2, "chg_parent"));
  std::set<std::string> member_keys;
  for (const json& m : s["members"])
    member_keys.insert(m["key"].get<std::string>());
  CHECK(member_keys == keys(v2));
}

TEST_CASE("show of an unknown key or name fails") {
  Cache cache;
  precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  for (const char* what : {"nosuch_name", "0123456789abcdef0123456789abcdef"}) {
    RunResult r = inspect(cache, {"show", what, "--json"});
    INFO(what << ": " << describe(r));
    CHECK(r.exit_code != 0);
    CHECK(!r.err.empty());
  }
}

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

TEST_SUITE_END();
