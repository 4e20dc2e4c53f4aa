// Unit tests for Storage (src/storage/storage.h): read-through of names,
// closures, jobs and images; write-back and read-only remote mode;
// fail-open with one notice; rejection of remote values that fail their
// checks; remote key naming. The remote is a small in-process backend: the
// backend interface (storage/remote/remote_backend.h) is what Storage is written
// against. tests/unit/storage/test_redis.cpp runs Storage over Redis.
#include "storage/storage.h"

#include "core/keys.h"
#include "core/target.h"
#include "fixtures/cache.hpp"
#include "fixtures/process.hpp"
#include "storage/bundle.h"

#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::storage;
using namespace kiln::test;

namespace {
// The end of a storage's first rejection line (later ones are summed up at
// its close).
const std::string kMore =
    " (further rejections are counted and reported once, at the close)\n";
} // namespace

namespace {

/// The in-process remote: values by key, and what was asked of it.
struct Shared {
  std::map<std::string, std::string> values;
  std::map<std::string, std::chrono::seconds> ttls;
  int gets = 0, puts = 0;
  bool down = false; ///< every call fails, as a dead server's would
};

class MemoryBackend final : public remote::Backend {
public:
  explicit MemoryBackend(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}

  Result<std::optional<std::string>> get(const std::string& key) override {
    ++shared_->gets;
    if (shared_->down)
      return make_error(Code::unavailable, "GET: Connection refused");
    auto it = shared_->values.find(key);
    if (it == shared_->values.end())
      return std::optional<std::string>();
    return std::optional<std::string>(it->second);
  }
  Status put(const std::string& key, std::string_view value, std::chrono::seconds ttl) override {
    ++shared_->puts;
    if (shared_->down)
      return make_error(Code::unavailable, "SET: Connection refused");
    shared_->values[key] = std::string(value);
    shared_->ttls[key] = ttl;
    return Status::ok();
  }
  Status remove(const std::string& key) override {
    shared_->values.erase(key);
    return Status::ok();
  }
  std::string describe() const override { return "memory://test"; }

private:
  std::shared_ptr<Shared> shared_;
};

remote::Remote memory_remote(const std::shared_ptr<Shared>& shared, remote::Options options = {}) {
  remote::Remote r;
  r.backend = std::make_unique<MemoryBackend>(shared);
  r.options = std::move(options);
  return r;
}

/// A cache holding nested.ll's nest_a for the host: three jobs, one
/// closure, its name and its image. Compiled once per test process.
struct Source {
  TestCache cache;
  Hash128 closure;
  std::vector<Hash128> jobs;
};

Source make_source() {
  Source s{nested_cache("kiln-storage-source"), {}, {}};
  s.closure = *parse_hash128(s.cache.root_closure());
  for (const JobReport& j : s.cache.report.jobs)
    s.jobs.push_back(*parse_hash128(j.key));
  return s;
}

const Source& source() {
  static const Source s = make_source();
  return s;
}

const std::string kArch = core::image_arch("host");

/// Publishes the source's jobs, closure, name and (if `image`) image.
void publish_source(const std::shared_ptr<Shared>& shared, bool jobs = true, bool image = true) {
  Storage a(open_store(source().cache.path()), memory_remote(shared));
  if (jobs)
    for (const Hash128& j : source().jobs)
      a.publish_job(j);
  auto closure = a.get_closure(source().closure);
  REQUIRE(closure);
  a.publish_closure(*closure);
  a.publish_name({"nest_a", "host", source().closure});
  if (image) {
    auto bytes = a.get_image(*closure, kArch);
    REQUIRE(bytes);
    REQUIRE(*bytes);
    a.publish_image({core::image_key(source().closure, kArch, "lld test"),
                     core::image_format(core::TargetKind::host), **bytes});
  }
}

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1))
    ++n;
  return n;
}

Counters counters_of(Storage& s) {
  Counters c;
  s.take_remote_counters(c);
  return c;
}

} // namespace

TEST_SUITE("storage") {

TEST_CASE("Storage: remote keys are <prefix>:v<bundle version>:<kind>:<id>; names are hashed") {
  auto shared = std::make_shared<Shared>();
  TestCache e = empty_cache();
  Storage plain(open_store(e.path()), memory_remote(shared));
  CHECK(plain.remote_key("job", "00ff") == "kiln:v1:job:00ff");
  // The name id of existing remote contents: hash128(target '\0' name).
  CHECK(storage::remote_name_id("nest_a", "host") ==
        hash128(std::string("host") + '\0' + "nest_a").hex());
  CHECK(storage::remote_name_id("nest_a", "host") == "bf92cb08bb5165986bd76da711306b9c");
  CHECK(storage::remote_name_id("a:b", "host") != storage::remote_name_id("a", "b:host"));

  remote::Options team;
  team.prefix = "team";
  Storage prefixed(open_store(e.path()), memory_remote(shared, team));
  CHECK(prefixed.remote_key("closure", "ab") == "team:v1:closure:ab");
}

TEST_CASE("Storage: what one cache publishes, an empty one reads through") {
  auto shared = std::make_shared<Shared>();
  publish_source(shared);
  for (const Hash128& j : source().jobs)
    CHECK(shared->values.count("kiln:v1:job:" + j.hex()));
  CHECK(shared->values.count("kiln:v1:closure:" + source().closure.hex()));
  CHECK(shared->values.count("kiln:v1:name:" + storage::remote_name_id("nest_a", "host")));
  CHECK(shared->values.count("kiln:v1:image:" + source().closure.hex() + ":" + kArch));

  TestCache e = empty_cache();
  Storage b(open_store(e.path()), memory_remote(shared));
  REQUIRE(b.has_remote());
  // A name brings its closure and every member job.
  auto key = b.resolve_name("nest_a", "host");
  INFO((key ? std::string() : key.error().message));
  REQUIRE(key);
  CHECK(*key == source().closure);
  auto local_name = b.records().names().resolve_name("nest_a", "host");
  REQUIRE(local_name);
  CHECK(*local_name == source().closure);
  auto src = open_store(source().cache.path());
  for (const Hash128& j : source().jobs) {
    auto has = b.records().jobs().has_job(j, {"obj"});
    REQUIRE(has);
    CHECK(*has);
    auto mine = b.records().jobs().get_artifact(j, "obj");
    auto theirs = src->jobs().get_artifact(j, "obj");
    REQUIRE(mine);
    REQUIRE(theirs);
    CHECK(*mine == *theirs);
  }
  auto closure = b.get_closure(*key);
  REQUIRE(closure);
  CHECK(closure->members.size() == 3);
  // The image, checked and stored: the second call is local.
  auto image = b.get_image(*closure, kArch);
  REQUIRE(image);
  REQUIRE(*image);
  CHECK(b.records().images().get_image_any_linker(*key, kArch));
  Counters c = counters_of(b);
  CHECK(c.remote_hits == 6); // name, closure, three jobs, image
  CHECK(c.remote_misses == 0);
  CHECK(c.remote_errors == 0);
  CHECK(c.remote_bytes_in > int64_t(image->value().size()));
  int gets = shared->gets;
  CHECK(b.get_image(*closure, kArch));
  CHECK(b.resolve_name("nest_a", "host"));
  CHECK(shared->gets == gets);
}

TEST_CASE("Storage: a string of key form is never asked of the remote as a name") {
  auto shared = std::make_shared<Shared>();
  publish_source(shared);
  // A name record spelling a closure key, as a hostile publisher may write.
  std::string victim = hash128("another root's closure").hex();
  {
    Storage a(open_store(source().cache.path()), memory_remote(shared));
    a.publish_name({victim, "host", source().closure});
  }
  REQUIRE(shared->values.count("kiln:v1:name:" + storage::remote_name_id(victim, "host")));
  TestCache e = empty_cache();
  Storage b(open_store(e.path()), memory_remote(shared));
  int gets = shared->gets;
  auto key = b.resolve_name(victim, "host");
  REQUIRE_FALSE(key);
  CHECK(key.error().code == Code::not_found);
  CHECK(shared->gets == gets);
  // A key is read as a key: the closure it spells, with no name.
  auto closure = b.get_closure(source().closure);
  REQUIRE(closure);
  CHECK(closure->key == source().closure);
  auto names = b.records().names().list_names();
  REQUIRE(names);
  CHECK(names->empty());
}

TEST_CASE("Storage: find_job says where a job was found; a miss asks the remote once") {
  auto shared = std::make_shared<Shared>();
  publish_source(shared);
  TestCache e = empty_cache();
  Storage b(open_store(e.path()), memory_remote(shared));
  const Hash128& job = source().jobs[0];
  auto first = b.find_job(job, {"obj"});
  REQUIRE(first);
  CHECK(*first == Found::remote);
  auto again = b.find_job(job, {"obj"});
  REQUIRE(again);
  CHECK(*again == Found::local);
  auto none = b.find_job(hash128("no such job"), {"obj"});
  REQUIRE(none);
  CHECK(*none == Found::nowhere);
  Counters c = counters_of(b);
  CHECK(c.remote_hits == 1);
  CHECK(c.remote_misses == 1);

  // Without a remote, a miss is only local.
  Storage alone(b.records());
  CHECK_FALSE(alone.has_remote());
  auto local_only = alone.find_job(source().jobs[1], {"obj"});
  REQUIRE(local_only);
  CHECK(*local_only == Found::nowhere);
}

TEST_CASE("Storage: a job that lacks a needed artifact is rejected, not stored") {
  auto shared = std::make_shared<Shared>();
  publish_source(shared);
  TestCache e = empty_cache();
  Storage b(open_store(e.path()), memory_remote(shared));
  const Hash128& job = source().jobs[0];
  Result<Found> found = Found::nowhere;
  std::string err = stderr_of([&] { found = b.find_job(job, {"obj", "cubin"}); });
  REQUIRE(found);
  CHECK(*found == Found::nowhere);
  CHECK(err == "kiln: remote cache memory://test: rejected job " + job.hex() +
                   ": it lacks its cubin artifact" + kMore);
  auto has = b.records().jobs().has_job(job, {});
  REQUIRE(has);
  CHECK_FALSE(*has);
  CHECK(counters_of(b).remote_errors == 1);
}

TEST_CASE("Storage: damaged or misplaced remote values are rejected and never stored") {
  auto shared = std::make_shared<Shared>();
  publish_source(shared);
  TestCache e = empty_cache();
  Storage b(open_store(e.path()), memory_remote(shared));
  const Hash128& victim = source().jobs[0];
  const Hash128& other = source().jobs[1];
  std::string& value = shared->values.at(b.remote_key("job", victim.hex()));

  SUBCASE("a damaged job") {
    value[value.size() / 2] = char(value[value.size() / 2] ^ 0x5a);
    std::string err = stderr_of([&] { CHECK(*b.find_job(victim, {}) == Found::nowhere); });
    CHECK(err.rfind("kiln: remote cache memory://test: rejected job " + victim.hex() + ": ", 0) ==
          0);
    CHECK_FALSE(*b.records().jobs().has_job(victim, {}));
  }
  SUBCASE("another job's value under this key") {
    value = shared->values.at(b.remote_key("job", other.hex()));
    std::string err = stderr_of([&] { CHECK(*b.find_job(victim, {}) == Found::nowhere); });
    CHECK(err == "kiln: remote cache memory://test: rejected job " + victim.hex() +
                     ": the value holds something else" + kMore);
    CHECK_FALSE(*b.records().jobs().has_job(victim, {}));
  }
  SUBCASE("a job whose record does not match its key") {
    auto data = decode_bundle(value);
    REQUIRE(data);
    data->jobs[0].record.entry = "renamed";
    value = encode_bundle(*data);
    std::string err = stderr_of([&] { CHECK(*b.find_job(victim, {}) == Found::nowhere); });
    CHECK_MESSAGE(err.find("rejected job " + victim.hex() + ": bundle: ") != std::string::npos,
                  err);
    CHECK_FALSE(*b.records().jobs().has_job(victim, {}));
  }
  SUBCASE("a closure that is not a bundle") {
    shared->values.at(b.remote_key("closure", source().closure.hex())) = "garbage";
    std::string err = stderr_of([&] {
      auto c = b.get_closure(source().closure);
      REQUIRE_FALSE(c);
      CHECK(c.error().code == Code::not_found);
    });
    CHECK(count(err, "rejected closure " + source().closure.hex()) == 1);
    CHECK(b.records().closures().get_closure(source().closure).error().code == Code::not_found);
  }
  SUBCASE("a closure that does not match its key") {
    std::string& cv = shared->values.at(b.remote_key("closure", source().closure.hex()));
    auto data = decode_bundle(cv);
    REQUIRE(data);
    data->closures[0].members.pop_back();
    cv = encode_bundle(*data);
    std::string err = stderr_of([&] { CHECK_FALSE(b.get_closure(source().closure)); });
    CHECK_MESSAGE(err.find("rejected closure " + source().closure.hex()) != std::string::npos,
                  err);
    CHECK(b.records().closures().get_closure(source().closure).error().code == Code::not_found);
  }
  SUBCASE("an image that fails its checks") {
    auto closure = open_store(source().cache.path())->closures().get_closure(source().closure);
    REQUIRE(closure);
    BundleData data;
    data.images.push_back({core::image_key(source().closure, kArch, "lld test"), "so",
                           "not an ELF file"});
    shared->values.at(b.remote_key("image", source().closure.hex() + ":" + kArch)) =
        encode_bundle(data);
    std::string err = stderr_of([&] {
      auto image = b.get_image(*closure, kArch);
      REQUIRE(image);
      CHECK_FALSE(*image);
    });
    CHECK(err.find("rejected image of closure " + source().closure.hex() + " for " + kArch) !=
          std::string::npos);
    CHECK(b.records().images().get_image_any_linker(source().closure, kArch).error().code ==
          Code::not_found);
  }
  SUBCASE("a name pointing at a closure for another target") {
    REQUIRE(b.resolve_name("nest_a", "host"));
    BundleData data;
    data.names.push_back({"nest_a", "sm_90", source().closure});
    shared->values[b.remote_key("name", storage::remote_name_id("nest_a", "sm_90"))] =
        encode_bundle(data);
    std::string err = stderr_of([&] {
      auto key = b.resolve_name("nest_a", "sm_90");
      REQUIRE_FALSE(key);
      CHECK(key.error().code == Code::not_found);
    });
    CHECK(err == "kiln: remote cache memory://test: rejected name nest_a (sm_90): it points at a "
                 "closure for host" +
                     kMore);
    CHECK_FALSE(b.records().names().resolve_name("nest_a", "sm_90"));
  }
  Counters c = counters_of(b);
  CHECK(c.remote_errors == 1);
}

TEST_CASE("Storage: a closure whose member jobs nobody published is not stored") {
  auto shared = std::make_shared<Shared>();
  publish_source(shared, /*jobs=*/false, /*image=*/false);
  TestCache e = empty_cache();
  Storage b(open_store(e.path()), memory_remote(shared));
  auto key = b.resolve_name("nest_a", "host");
  REQUIRE_FALSE(key);
  CHECK(key.error().code == Code::not_found);
  CHECK_FALSE(b.records().names().resolve_name("nest_a", "host"));
  CHECK(b.records().closures().get_closure(source().closure).error().code == Code::not_found);
  Counters c = counters_of(b);
  CHECK(c.remote_errors == 0); // missing is not wrong
  CHECK(c.remote_misses == 1);

  // Once the jobs are there, the same lookup succeeds.
  publish_source(shared, /*jobs=*/true, /*image=*/false);
  auto later = b.resolve_name("nest_a", "host");
  REQUIRE(later);
  CHECK(*later == source().closure);
}

TEST_CASE("Storage: write-back publishes what is stored; read-only mode publishes nothing") {
  auto src = open_store(source().cache.path());
  const Hash128& job = source().jobs[0];
  auto rec = src->jobs().get_job(job);
  auto refs = src->jobs().job_refs(job);
  auto obj = src->jobs().get_artifact(job, "obj");
  REQUIRE(rec);
  REQUIRE(refs);
  REQUIRE(obj);
  ImageKey ikey = core::image_key(source().closure, kArch, "lld test");

  SUBCASE("read-write, with a TTL") {
    auto shared = std::make_shared<Shared>();
    remote::Options o;
    o.ttl = std::chrono::seconds(3600);
    TestCache e = empty_cache();
    Storage a(open_store(e.path()), memory_remote(shared, o));
    REQUIRE(a.put_job(*rec, {{"obj", *obj}}, *refs));
    CHECK(*a.records().jobs().has_job(job, {"obj"}));
    std::string jkey = a.remote_key("job", job.hex());
    REQUIRE(shared->values.count(jkey));
    CHECK(shared->ttls.at(jkey) == std::chrono::seconds(3600));
    auto data = decode_bundle(shared->values.at(jkey));
    REQUIRE(data);
    REQUIRE(data->jobs.size() == 1);
    CHECK(data->jobs[0].artifacts.at(0).bytes == *obj);
    (void)a.put_image(ikey, "so", "image bytes");
    CHECK(shared->values.count(a.remote_key("image", source().closure.hex() + ":" + kArch)));
    Counters c = counters_of(a);
    CHECK(c.remote_bytes_out > int64_t(obj->size()));
    CHECK(counters_of(a).remote_bytes_out == 0); // taken once
  }
  SUBCASE("read-only") {
    auto shared = std::make_shared<Shared>();
    publish_source(shared);
    size_t published = shared->values.size();
    int puts = shared->puts;
    remote::Options o;
    o.read_only = true;
    TestCache e = empty_cache();
    Storage a(open_store(e.path()), memory_remote(shared, o));
    REQUIRE(a.put_job(*rec, {{"obj", *obj}}, *refs));
    CHECK(*a.records().jobs().has_job(job, {"obj"})); // stored locally all the same
    a.publish_name({"other", "host", source().closure});
    (void)a.put_image(ikey, "so", "image bytes");
    // It still fetches what others published.
    auto key = a.resolve_name("nest_a", "host");
    REQUIRE(key);
    CHECK(shared->puts == puts);
    CHECK(shared->values.size() == published);
    CHECK(counters_of(a).remote_bytes_out == 0);
  }
}

TEST_CASE("Storage: fail-open: the first failed call disables the remote, with one notice") {
  auto shared = std::make_shared<Shared>();
  publish_source(shared);
  shared->down = true;
  const int gets = shared->gets, puts = shared->puts;
  TestCache e = empty_cache();
  Storage b(open_store(e.path()), memory_remote(shared));
  std::string err = stderr_of([&] {
    auto key = b.resolve_name("nest_a", "host");
    REQUIRE_FALSE(key);
    CHECK(key.error().code == Code::not_found); // the local answer, not the remote's failure
    CHECK(*b.find_job(source().jobs[0], {"obj"}) == Found::nowhere);
    CHECK(b.get_closure(source().closure).error().code == Code::not_found);
    b.publish_name({"nest_a", "host", source().closure});
    b.publish_job(source().jobs[0]);
  });
  CHECK(err == "kiln: remote cache memory://test unavailable (GET: Connection refused); "
               "continuing with the local cache only\n");
  CHECK(shared->gets == gets + 1);
  CHECK(shared->puts == puts);
  // The server comes back: this process keeps to its local cache.
  shared->down = false;
  CHECK(*b.find_job(source().jobs[0], {"obj"}) == Found::nowhere);
  CHECK(shared->gets == gets + 1);
  Counters c = counters_of(b);
  CHECK(c.remote_errors == 1);
  CHECK(c.remote_hits == 0);
  CHECK(c.remote_misses == 0);
}

TEST_CASE("Storage: a failed publish disables the remote too") {
  auto shared = std::make_shared<Shared>();
  shared->down = true;
  TestCache e = empty_cache();
  Storage a(open_store(e.path()), memory_remote(shared));
  std::string err = stderr_of([&] {
    a.publish_name({"n", "host", source().closure});
    a.publish_name({"m", "host", source().closure});
  });
  CHECK(count(err, "continuing with the local cache only") == 1);
  CHECK(err.find("(SET: Connection refused)") != std::string::npos);
  CHECK(shared->puts == 1);
  CHECK(counters_of(a).remote_errors == 1);
}

TEST_CASE("Storage over a store it does not own: local only") {
  auto src = open_store(source().cache.path());
  Storage local(*src);
  CHECK_FALSE(local.has_remote());
  CHECK(&local.records() == src.get());
  auto closure = local.get_closure(source().closure);
  REQUIRE(closure);
  auto image = local.get_image(*closure, kArch);
  REQUIRE(image);
  CHECK(*image);
  auto missing = local.get_image(*closure, "sm_90");
  REQUIRE(missing);
  CHECK_FALSE(*missing);
  Counters c = counters_of(local);
  CHECK(c.empty());
}

} // TEST_SUITE
