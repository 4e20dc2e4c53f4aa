// Unit tests for the admin views as JSON (src/admin/json.cpp): one line per
// view, the fields kiln-inspect --json and the C API promise, in their order;
// names that are not UTF-8 (LLVM names are bytes, and a cache is hostile
// input) kept exactly in a "<field>_hex" sibling; numbers as integers where
// they count and as fractions where they are ratios.
#include "admin/admin_cache.hpp"

#include <kiln/admin.hpp>
#include <kiln/kiln.hpp>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::test;

namespace {

using json = nlohmann::ordered_json;

/// `text` parsed; REQUIREs one line of valid JSON.
json parsed(const std::string& text) {
  INFO(text);
  REQUIRE(text.find('\n') == std::string::npos);
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  REQUIRE_FALSE(j.is_discarded());
  return j;
}

std::vector<std::string> keys_of(const json& j) {
  std::vector<std::string> out;
  for (auto it = j.begin(); it != j.end(); ++it)
    out.push_back(it.key());
  return out;
}

const std::string kReplacement = "\xef\xbf\xbd"; // U+FFFD

} // namespace

TEST_CASE("admin json: a root name that is not UTF-8 keeps its exact bytes in name_hex, and a "
          "valid one with quotes and control bytes round-trips as it is") {
  const std::string raw = std::string("k\xff\xfe") + "_z";
  const std::string odd = "q\"\\\n\x01 \xc3\xa9";
  TestCache c = open_cache("kiln-admin-json");
  core::JobRecord j = consistent_job("root");
  REQUIRE(c.store->jobs().put_job(j, {{"obj", "object"}}, {}));
  core::ClosureRecord closure = closure_of(j);
  REQUIRE(c.store->closures().put_closure(
      closure, {{raw, "host", closure.key}, {odd, "host", closure.key}}));
  c.store.reset();
  Cache cache = open_api(c.path());

  json ls = parsed(admin::to_json(admin_ok(admin::list(cache))));
  REQUIRE(ls["names"].size() == 2);
  const json* bytes_name = nullptr;
  const json* odd_name = nullptr;
  for (const json& n : ls["names"])
    (n.contains("name_hex") ? bytes_name : odd_name) = &n;
  REQUIRE(bytes_name);
  REQUIRE(odd_name);
  CHECK((*bytes_name)["name"] == "k" + kReplacement + kReplacement + "_z");
  CHECK((*bytes_name)["name_hex"] == "6bfffe5f7a");
  CHECK((*bytes_name)["closure"] == closure.key.hex());
  // The sibling follows its field.
  CHECK(keys_of(*bytes_name) == std::vector<std::string>{"name", "name_hex", "target", "closure"});
  CHECK((*odd_name)["name"] == odd);
  CHECK_FALSE(odd_name->contains("name_hex"));

  // The same name, looked up by its bytes, shows the same way.
  json shown = parsed(admin::to_json(admin_ok(admin::show(cache, raw, "host"))));
  CHECK(shown["kind"] == "root");
  CHECK(shown["name_hex"] == "6bfffe5f7a");
  CHECK(shown["closure"] == closure.key.hex());
}

TEST_CASE("admin json: an array of strings with one that is not UTF-8 gains a parallel hex array") {
  admin::Library lib;
  lib.name = "lib";
  lib.target = "host";
  lib.closure = std::string(32, 'a');
  lib.roots = {"ok", "b\x80"};
  lib.members = {{"sym", "entry", std::string(32, 'b')}};
  lib.images = 2;
  json j = parsed(admin::to_json(lib));
  CHECK(keys_of(j) == std::vector<std::string>{"kind", "name", "target", "closure", "roots",
                                               "roots_hex", "members", "images"});
  CHECK(j["roots"] == json::array({"ok", "b" + kReplacement}));
  CHECK(j["roots_hex"] == json::array({"6f6b", "6280"}));
  CHECK(j["images"] == 2);
  CHECK(j["members"][0]["key"] == std::string(32, 'b'));

  // The listing of libraries counts the roots rather than listing them.
  json list = parsed(admin::to_json(std::vector<admin::Library>{lib}));
  REQUIRE(list.is_array());
  CHECK(list[0]["roots"] == 2);
  CHECK_FALSE(list[0].contains("members"));
}

TEST_CASE("admin json: stats are integers, exact past 2^53, its ratio a fraction, and a target "
          "that is not UTF-8 is only replaced") {
  admin::Stats s;
  s.cache = "/c/kiln.db";
  s.jobs = 3;
  s.stored_bytes = 25;
  s.raw_bytes = 100;
  s.ratio = 0.25;
  s.file_bytes = std::numeric_limits<int64_t>::max();
  s.live_bytes = (int64_t(1) << 53) + 1;
  s.max_size = int64_t(5) << 30;
  s.jobs_per_target = {{"host", 2}, {"sm\xff", 1}};
  s.counters.loads = 7;
  s.counters.remote_errors = 1;
  std::string text = admin::to_json(s);
  json j = parsed(text);
  CHECK(keys_of(j) ==
        std::vector<std::string>{"jobs",         "closures",         "images",
                                 "names",        "stored_bytes",     "raw_bytes",
                                 "ratio",        "file_bytes",       "live_bytes",
                                 "max_size",     "targets",          "job_hits",
                                 "job_misses",   "image_hits",       "image_misses",
                                 "loads",        "remote_hits",      "remote_misses",
                                 "remote_bytes_in", "remote_bytes_out", "remote_errors"});
  CHECK(j["jobs"].is_number_integer());
  CHECK(j["ratio"].is_number_float());
  CHECK(j["ratio"].get<double>() == doctest::Approx(0.25));
  // Written as digits, not through a double.
  CHECK(contains(text, "\"file_bytes\":9223372036854775807"));
  CHECK(contains(text, "\"live_bytes\":9007199254740993"));
  CHECK(j["max_size"] == (int64_t(5) << 30));
  CHECK(j["loads"] == 7);
  CHECK(j["remote_errors"] == 1);
  CHECK(j["targets"]["host"] == 2);
  CHECK(j["targets"]["sm" + kReplacement] == 1);
  CHECK(keys_of(j["targets"]).size() == 2);
  // The cache's path is not part of the JSON view.
  CHECK_FALSE(j.contains("cache"));
}

TEST_CASE("admin json: a job entry and a root entry say which they are, with their fields") {
  admin::Job job;
  job.key = std::string(32, '1');
  job.entry = "e";
  job.compile_ms = 1.5;
  job.artifacts = {{"obj", 10, 4}};
  job.refs = {{"sym", "callee"}};
  json j = parsed(admin::to_json(admin::Entry(job)));
  CHECK(j["kind"] == "job");
  CHECK(j["key"] == job.key);
  CHECK(j["compile_ms"].get<double>() == doctest::Approx(1.5));
  CHECK(j["artifacts"] == json::parse(R"([{"format":"obj","raw_size":10,"stored_size":4}])"));
  CHECK(j["refs"] == json::parse(R"([{"symbol":"sym","entry":"callee"}])"));

  admin::Root root{"n", "host", std::string(32, '2'), std::string(32, '3'), "a.ll b.ll",
                   {{"s", "e", std::string(32, '1')}}};
  json r = parsed(admin::to_json(admin::Entry(root)));
  CHECK(keys_of(r) == std::vector<std::string>{"kind", "name", "target", "closure", "root_job",
                                               "unit", "members"});
  CHECK(r["kind"] == "root");
  CHECK(r["unit"] == "a.ll b.ll");
  CHECK(r["members"][0] == json::parse(R"({"symbol":"s","entry":"e","key":")" +
                                       std::string(32, '1') + R"("})"));
}

TEST_CASE("admin json: a listed job whose artifacts could not be read has none, and its "
          "references stay") {
  admin::Listing l;
  admin::ListedJob lj;
  lj.job.key = std::string(32, 'c');
  lj.artifacts = make_error(Code::corrupt, "damaged");
  lj.refs = std::vector<admin::Reference>{{"s", "t"}};
  l.jobs.push_back(lj);
  json j = parsed(admin::to_json(l));
  REQUIRE(j["jobs"].size() == 1);
  CHECK(j["jobs"][0]["artifacts"] == json::array());
  CHECK(j["jobs"][0]["refs"].size() == 1);
  CHECK(j["names"] == json::array());
}

TEST_CASE("admin json: verify's ok follows its problems; gc, bundles, portability, explain and "
          "settings carry their numbers") {
  admin::VerifyReport v;
  v.jobs = 4;
  v.closures = 2;
  v.schema = 13;
  json healthy = parsed(admin::to_json(v));
  CHECK(healthy["ok"] == true);
  CHECK(healthy["problems"] == json::array());
  v.problems.push_back({"job", std::string(32, 'd'), "key mismatch"});
  json bad = parsed(admin::to_json(v));
  CHECK(bad["ok"] == false);
  CHECK(bad["jobs"] == 4);
  CHECK(bad["schema"] == 13);
  CHECK(bad["problems"][0] ==
        json::parse(R"({"kind":"job","key":")" + std::string(32, 'd') +
                    R"(","message":"key mismatch"})"));

  admin::GcReport gc;
  gc.dry_run = true;
  gc.evicted_closures = {std::string(32, 'e')};
  gc.evicted_jobs = 3;
  gc.bytes_before = 100;
  gc.bytes_after = 40;
  json g = parsed(admin::to_json(gc));
  CHECK(g["dry_run"] == true);
  CHECK(g["evicted_closures"] == json::array({std::string(32, 'e')}));
  CHECK(g["evicted_jobs"] == 3);
  CHECK(g["bytes_after"] == 40);

  // bytes is the exported file's size: an import has none to give.
  admin::BundleSummary ex{"f", 1, 2, 3, 4, 500, true};
  json e = parsed(admin::to_json(ex));
  CHECK(e == json::parse(R"({"closures":1,"jobs":2,"images":3,"names":4,"bytes":500})"));
  admin::BundleSummary im{"f", 1, 2, 3, 4, 0, false};
  CHECK_FALSE(parsed(admin::to_json(im)).contains("bytes"));

  admin::Portability p;
  p.loadable = 1;
  p.closures.push_back({std::string(32, 'f'), "host", "x86-64", {"a"}, true, "", "", {}, {}});
  p.closures.push_back({std::string(32, '9'), "host", "znver4", {"b", "c"}, false, "cpu",
                        "needs avx512f", {"avx512f"}, {"new-feature"}});
  p.closures.push_back({std::string(32, '8'), "sm_90", "sm_90", {}, false, "gpu", "no device",
                        {}, {}});
  json pj = parsed(admin::to_json(p));
  CHECK(pj["closures"] == 3);
  CHECK(pj["loadable"] == 1);
  CHECK(pj["not_loadable"] == 2);
  CHECK(pj["details"].size() == 3);
  CHECK(pj["details"][2]["names"] == json::array());
  CHECK(pj["details"][1]["component"] == "cpu");
  CHECK(pj["details"][1]["names"] == json::array({"b", "c"}));
  CHECK(pj["details"][1]["missing_features"] == json::array({"avx512f"}));
  CHECK(pj["details"][1]["unknown_features"] == json::array({"new-feature"}));

  admin::Explanation same{"a", "b", {}};
  CHECK(parsed(admin::to_json(same))["same"] == true);
  admin::Explanation differ{"a", "b", {{"opt_level", "2", "3"}}};
  json d = parsed(admin::to_json(differ));
  CHECK(d["same"] == false);
  CHECK(d["differences"] == json::parse(R"([{"component":"opt_level","a":"2","b":"3"}])"));

  admin::Settings st{1048576, "cache setting", true, "default"};
  CHECK(parsed(admin::to_json(st)) ==
        json::parse(R"({"max_size":1048576,"max_size_source":"cache setting",)"
                    R"("require_signed":true,"require_signed_source":"default"})"));
}

TEST_CASE("admin json: an exported image and a graph name their keys and sizes") {
  admin::ExportedImage img{std::string(32, 'a'), "sm_90", "/out/x.cubin", 3, 4096};
  CHECK(parsed(admin::to_json(img)) ==
        json::parse(R"({"closure":")" + std::string(32, 'a') +
                    R"(","target":"sm_90","path":"/out/x.cubin","members":3,"bytes":4096})"));

  admin::Graph g;
  g.closure = std::string(32, '1');
  g.root_job = std::string(32, '2');
  g.target = "host";
  g.members = {{"s2", "root", std::string(32, '2')}, {"s3", "leaf", std::string(32, '3')}};
  g.edges = {{std::string(32, '2'), std::string(32, '3'), "s3"}};
  json j = parsed(admin::to_json(g));
  CHECK(keys_of(j) == std::vector<std::string>{"closure", "root", "target", "nodes", "edges"});
  CHECK(j["root"] == std::string(32, '2'));
  CHECK(j["nodes"].size() == 2);
  CHECK(j["nodes"][1] == json::parse(R"({"key":")" + std::string(32, '3') +
                                     R"(","entry":"leaf","symbol":"s3"})"));
  CHECK(j["edges"][0]["to"] == std::string(32, '3'));
}
