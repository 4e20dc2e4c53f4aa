// Helpers for the integration tests that drive kiln-inspect
// (inspect_helpers.hpp).
#include "inspect_helpers.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <fstream>

namespace kiln_it {

namespace {

const char* const kIntFields[] = {"jobs",       "closures",  "images",     "names",
                                  "stored_bytes", "raw_bytes", "file_bytes", "max_size",
                                  "job_hits",   "job_misses", "image_hits", "image_misses",
                                  "loads"};

} // namespace

json inspect_json(const Cache& cache, const std::vector<std::string>& args, int want) {
  RunResult r = inspect(cache, args);
  INFO("kiln-inspect " << args.front() << ": " << describe(r));
  REQUIRE(r.exit_code == want);
  json j;
  REQUIRE_NOTHROW(j = json::parse(r.out));
  REQUIRE(j.is_object());
  return j;
}

RunResult inspect_at(const fs::path& db, const std::vector<std::string>& args) {
  std::vector<std::string> argv{inspect_bin().string(), "--cache", db.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv);
}

std::int64_t num(const json& j, const char* field) {
  INFO("field " << field << " of " << j.dump());
  REQUIRE(j.contains(field));
  REQUIRE(j[field].is_number_integer());
  return j[field].get<std::int64_t>();
}

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

std::optional<int> try_call(const fs::path& db, const std::string& name, const char* entry,
                            int arg, std::string* why) {
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

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  REQUIRE(out.good());
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

} // namespace kiln_it
