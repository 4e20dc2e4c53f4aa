#include "storage/remote/tier.h"

#include "storage/bundle.h"
#include "core/keys.h"
#include "core/check.h"

#include <hiredis/hiredis.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sys/time.h>

namespace kiln::storage::remote {

namespace {

Error bad_url(const std::string& why) {
  // The URL itself is never echoed: it may carry a password.
  return make_error(Code::invalid_argument, "remote cache URL: " + why);
}

Result<int64_t> parse_number(const std::string& s, const std::string& what, int64_t lo,
                             int64_t hi) {
  if (s.empty() || s.size() > 12 || s.find_first_not_of("0123456789") != std::string::npos)
    return bad_url(what + " must be a number, not '" + s + "'");
  int64_t v = std::stoll(s);
  if (v < lo || v > hi)
    return bad_url(what + " must be in " + std::to_string(lo) + ".." + std::to_string(hi));
  return v;
}

Result<std::string> percent_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    auto hex = [](char c) {
      return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                                 : -1;
    };
    if (i + 2 >= s.size() || hex(s[i + 1]) < 0 || hex(s[i + 2]) < 0)
      return bad_url("bad percent escape in the credentials");
    out += char(hex(s[i + 1]) * 16 + hex(s[i + 2]));
    i += 2;
  }
  return out;
}

struct Reply {
  redisReply* r = nullptr;
  explicit Reply(void* p) : r(static_cast<redisReply*>(p)) {}
  ~Reply() {
    if (r)
      freeReplyObject(r);
  }
  Reply(const Reply&) = delete;
  Reply& operator=(const Reply&) = delete;
};

} // namespace

std::string Config::where() const {
  return "redis://" + host + ":" + std::to_string(port) + "/" + std::to_string(db);
}

Result<Config> parse_url(const std::string& url) {
  Config c;
  std::string rest;
  if (url.rfind("rediss://", 0) == 0)
    return bad_url("rediss:// (TLS) is not supported by this build: its hiredis has no TLS; use "
                   "redis:// over a trusted network or a TLS tunnel");
  if (url.rfind("redis://", 0) != 0)
    return bad_url("must start with redis://");
  rest = url.substr(8);
  std::string query;
  if (size_t q = rest.find('?'); q != std::string::npos) {
    query = rest.substr(q + 1);
    rest.resize(q);
  }
  std::string path;
  if (size_t s = rest.find('/'); s != std::string::npos) {
    path = rest.substr(s + 1);
    rest.resize(s);
  }
  if (size_t at = rest.rfind('@'); at != std::string::npos) {
    std::string cred = rest.substr(0, at);
    rest = rest.substr(at + 1);
    std::string user, pass;
    if (size_t colon = cred.find(':'); colon != std::string::npos) {
      user = cred.substr(0, colon);
      pass = cred.substr(colon + 1);
    } else {
      pass = cred; // redis://password@host, as redis-cli -u accepts
    }
    auto u = percent_decode(user);
    if (!u)
      return u.error();
    auto p = percent_decode(pass);
    if (!p)
      return p.error();
    c.user = u.take();
    c.password = p.take();
  }
  if (!rest.empty() && rest[0] == '[') { // [ipv6]:port
    size_t close = rest.find(']');
    if (close == std::string::npos)
      return bad_url("unterminated [ in the host");
    c.host = rest.substr(1, close - 1);
    rest = rest.substr(close + 1);
    if (!rest.empty() && rest[0] != ':')
      return bad_url("junk after the host's ]");
    if (!rest.empty()) {
      auto port = parse_number(rest.substr(1), "the port", 1, 65535);
      if (!port)
        return port.error();
      c.port = int(*port);
    }
  } else if (size_t colon = rest.rfind(':'); colon != std::string::npos) {
    c.host = rest.substr(0, colon);
    auto port = parse_number(rest.substr(colon + 1), "the port", 1, 65535);
    if (!port)
      return port.error();
    c.port = int(*port);
  } else {
    c.host = rest;
  }
  if (c.host.empty())
    return bad_url("no host");
  if (!path.empty()) {
    auto db = parse_number(path, "the database number", 0, 1 << 20);
    if (!db)
      return db.error();
    c.db = int(*db);
  }
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string opt = query.substr(0, amp);
    query = amp == std::string::npos ? "" : query.substr(amp + 1);
    size_t eq = opt.find('=');
    std::string k = opt.substr(0, eq), v = eq == std::string::npos ? "" : opt.substr(eq + 1);
    if (k == "prefix") {
      if (v.empty() || v.find_first_of(" \t\r\n") != std::string::npos)
        return bad_url("prefix must be a non-empty word");
      c.prefix = v;
    } else if (k == "ttl") {
      auto t = parse_number(v, "ttl", 0, int64_t(1) << 40);
      if (!t)
        return t.error();
      c.ttl_s = *t;
    } else if (k == "timeout_ms") {
      auto t = parse_number(v, "timeout_ms", 1, 600000);
      if (!t)
        return t.error();
      c.timeout_ms = int(*t);
    } else if (k == "read_only") {
      if (v != "0" && v != "1" && !v.empty())
        return bad_url("read_only must be 0 or 1");
      c.read_only = v != "0";
    } else if (!k.empty()) {
      return bad_url("unknown option '" + k +
                     "' (known: prefix, ttl, timeout_ms, read_only)");
    }
  }
  return c;
}

Tier::Tier(Config config) : config_(std::move(config)) {}

Tier::~Tier() {
  if (ctx_)
    redisFree(ctx_);
}

Result<std::unique_ptr<Tier>> Tier::configured(const std::string& url, bool read_only) {
  std::string u = url;
  const char* from = "--remote";
  if (u.empty()) {
    const char* env = std::getenv("KILN_REMOTE");
    u = env ? env : "";
    from = "KILN_REMOTE";
  }
  if (u.empty() || u == "off")
    return std::unique_ptr<Tier>();
  auto c = parse_url(u);
  if (!c)
    return c.error().context(from);
  const char* ro = std::getenv("KILN_REMOTE_READ_ONLY");
  if (read_only || (ro && std::string(ro) == "1"))
    c->read_only = true;
  return std::make_unique<Tier>(c.take());
}

std::string Tier::key_of(const std::string& kind, const std::string& id) const {
  return config_.prefix + ":v" + std::to_string(storage::kBundleVersion) + ":" + kind + ":" + id;
}

std::string Tier::name_id(const std::string& name, const std::string& target) {
  // Names and targets may hold ':' and arbitrary bytes: the key hashes them;
  // the value carries them in clear and is checked against the request.
  return hash128(target + '\0' + name).hex();
}

void Tier::fail(const std::string& what_failed) {
  std::string why = what_failed;
  // A read timeout surfaces as EAGAIN's text: say what it means.
  if (ctx_ && ctx_->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK) &&
      why.find("temporarily") != std::string::npos)
    why = why.substr(0, why.find(':')) + ": no answer within " +
          std::to_string(config_.timeout_ms) + " ms";
  ++counters_.remote_errors;
  if (!disabled_)
    std::fprintf(stderr,
                 "kiln: remote cache %s unavailable (%s); continuing with the local cache "
                 "only\n",
                 config_.where().c_str(), why.c_str());
  disabled_ = true;
  if (ctx_) {
    redisFree(ctx_);
    ctx_ = nullptr;
  }
}

void Tier::reject(const std::string& what, const std::string& why) {
  ++counters_.remote_errors;
  std::fprintf(stderr, "kiln: remote cache %s: rejected %s: %s\n", config_.where().c_str(),
               what.c_str(), why.c_str());
}

bool Tier::connect() {
  if (disabled_)
    return false;
  if (ctx_)
    return true;
  timeval tv{config_.timeout_ms / 1000, (config_.timeout_ms % 1000) * 1000};
  ctx_ = redisConnectWithTimeout(config_.host.c_str(), config_.port, tv);
  if (!ctx_) {
    fail("cannot allocate a connection");
    return false;
  }
  if (ctx_->err) {
    fail(ctx_->errstr);
    return false;
  }
  if (redisSetTimeout(ctx_, tv) != REDIS_OK) {
    fail("cannot set the timeout");
    return false;
  }
  auto simple = [&](Reply r, const char* what) {
    if (!r.r) {
      fail(std::string(what) + ": " + (ctx_ ? ctx_->errstr : "no reply"));
      return false;
    }
    if (r.r->type == REDIS_REPLY_ERROR) {
      // The server's text, never ours: it does not contain the password.
      fail(std::string(what) + " refused: " + std::string(r.r->str, r.r->len));
      return false;
    }
    return true;
  };
  if (!config_.password.empty()) {
    bool ok = config_.user.empty()
                  ? simple(Reply(redisCommand(ctx_, "AUTH %b", config_.password.data(),
                                              config_.password.size())),
                           "AUTH")
                  : simple(Reply(redisCommand(ctx_, "AUTH %b %b", config_.user.data(),
                                              config_.user.size(), config_.password.data(),
                                              config_.password.size())),
                           "AUTH");
    if (!ok)
      return false;
  }
  if (config_.db != 0 && !simple(Reply(redisCommand(ctx_, "SELECT %d", config_.db)), "SELECT"))
    return false;
  return true;
}

std::optional<std::string> Tier::get(const std::string& key) {
  if (!connect())
    return std::nullopt;
  Reply r(redisCommand(ctx_, "GET %b", key.data(), key.size()));
  if (!r.r) {
    fail(std::string("GET: ") + ctx_->errstr);
    return std::nullopt;
  }
  if (r.r->type == REDIS_REPLY_NIL) {
    ++counters_.remote_misses;
    return std::nullopt;
  }
  if (r.r->type != REDIS_REPLY_STRING) {
    fail(r.r->type == REDIS_REPLY_ERROR ? "GET refused: " + std::string(r.r->str, r.r->len)
                                        : std::string("GET: unexpected reply type"));
    return std::nullopt;
  }
  counters_.remote_bytes_in += int64_t(r.r->len);
  return std::string(r.r->str, r.r->len);
}

void Tier::set(const std::string& key, const std::string& value) {
  if (config_.read_only || !connect())
    return;
  Reply r(config_.ttl_s > 0
              ? redisCommand(ctx_, "SET %b %b EX %lld", key.data(), key.size(), value.data(),
                             value.size(), static_cast<long long>(config_.ttl_s))
              : redisCommand(ctx_, "SET %b %b", key.data(), key.size(), value.data(),
                             value.size()));
  if (!r.r) {
    fail(std::string("SET: ") + ctx_->errstr);
    return;
  }
  if (r.r->type == REDIS_REPLY_ERROR) {
    fail("SET refused: " + std::string(r.r->str, r.r->len));
    return;
  }
  counters_.remote_bytes_out += int64_t(value.size());
}

bool Tier::fetch_job(storage::Store& store, const Hash128& key,
                     const std::vector<std::string>& formats) {
  std::lock_guard lock(mu_);
  return fetch_job_locked(store, key, formats);
}

bool Tier::fetch_job_locked(storage::Store& store, const Hash128& key,
                            const std::vector<std::string>& formats) {
  auto value = get(key_of("job", key.hex()));
  if (!value)
    return false;
  std::string what = "job " + key.hex();
  auto data = storage::decode_bundle(*value);
  if (!data) {
    reject(what, data.error().message);
    return false;
  }
  if (data->jobs.size() != 1 || !data->closures.empty() || !data->images.empty() ||
      !data->names.empty() || data->jobs[0].record.key != key) {
    reject(what, "the value holds something else");
    return false;
  }
  // The job's key recomputed from its components, its deferred symbol, its
  // artifacts present: what an import checks.
  if (Status s = core::check_bundle(*data); !s) {
    reject(what, s.error().message);
    return false;
  }
  const core::BundleData::Job& j = data->jobs[0];
  std::set<std::string> have;
  for (const core::Artifact& a : j.artifacts)
    have.insert(a.format);
  for (const std::string& f : formats)
    if (!have.count(f)) {
      reject(what, "it lacks its " + f + " artifact");
      return false;
    }
  if (Status s = store.put_job(j.record, j.artifacts, j.refs); !s)
    return false; // a local problem, not the remote's
  ++counters_.remote_hits;
  return true;
}

bool Tier::fetch_closure(storage::Store& store, const Hash128& key) {
  std::lock_guard lock(mu_);
  return fetch_closure_locked(store, key, {});
}

bool Tier::fetch_closure_locked(storage::Store& store, const Hash128& key,
                                const std::vector<core::NameRecord>& names) {
  auto value = get(key_of("closure", key.hex()));
  if (!value)
    return false;
  std::string what = "closure " + key.hex();
  auto data = storage::decode_bundle(*value);
  if (!data) {
    reject(what, data.error().message);
    return false;
  }
  if (data->closures.size() != 1 || !data->jobs.empty() || !data->images.empty() ||
      !data->names.empty() || data->closures[0].key != key) {
    reject(what, "the value holds something else");
    return false;
  }
  core::ClosureRecord& c = data->closures[0];
  core::ClosureMap members;
  bool has_root = false;
  for (const core::ClosureMember& m : c.members) {
    members.emplace_back(m.symbol, m.job);
    has_root |= m.job == c.root_job;
  }
  if (!has_root || core::closure_key(c.root_job, members) != c.key) {
    reject(what, "it does not match its key");
    return false;
  }
  std::set<std::string> symbols;
  for (const core::ClosureMember& m : c.members)
    symbols.insert(m.symbol);
  for (const core::ClosureMember& m : c.members) {
    auto has = store.has_job(m.job, {});
    if (!has)
      return false;
    if (!*has && !fetch_job_locked(store, m.job, {}))
      return false; // a member nobody published: the closure is of no use yet
    auto job = store.get_job(m.job);
    if (!job)
      return false;
    if (job->symbol != m.symbol || job->target != c.target) {
      reject(what, "member " + m.job.hex() + " defines another symbol or target");
      return false;
    }
    auto refs = store.job_refs(m.job);
    if (!refs)
      return false;
    for (const core::JobRef& r : *refs)
      if (!symbols.count(r.symbol)) {
        reject(what, "it leaves " + r.symbol + " unresolved");
        return false;
      }
  }
  if (Status s = store.put_closure(c, names); !s)
    return false;
  ++counters_.remote_hits;
  return true;
}

std::optional<Hash128> Tier::fetch_name(storage::Store& store, const std::string& name,
                                        const std::string& target) {
  std::lock_guard lock(mu_);
  auto value = get(key_of("name", name_id(name, target)));
  if (!value)
    return std::nullopt;
  std::string what = "name " + name + " (" + target + ")";
  auto data = storage::decode_bundle(*value);
  if (!data) {
    reject(what, data.error().message);
    return std::nullopt;
  }
  if (data->names.size() != 1 || !data->jobs.empty() || !data->images.empty() ||
      !data->closures.empty() || data->names[0].name != name || data->names[0].target != target) {
    reject(what, "the value holds something else");
    return std::nullopt;
  }
  ++counters_.remote_hits;
  Hash128 key = data->names[0].closure;
  auto local = store.get_closure(key);
  if (local) {
    if (local->target != target) {
      reject(what, "it points at a closure for " + local->target);
      return std::nullopt;
    }
    if (!store.put_closure(*local, data->names))
      return std::nullopt;
    return key;
  }
  if (!fetch_closure_locked(store, key, data->names))
    return std::nullopt;
  return key;
}

std::optional<std::string> Tier::fetch_image(storage::Store& store,
                                             const core::ClosureRecord& closure,
                                             const std::string& arch) {
  std::lock_guard lock(mu_);
  auto value = get(key_of("image", closure.key.hex() + ":" + arch));
  if (!value)
    return std::nullopt;
  std::string what = "image of closure " + closure.key.hex() + " for " + arch;
  auto data = storage::decode_bundle(*value);
  if (!data) {
    reject(what, data.error().message);
    return std::nullopt;
  }
  if (data->images.size() != 1 || !data->jobs.empty() || !data->closures.empty() ||
      !data->names.empty() || data->images[0].key.closure != closure.key ||
      data->images[0].key.arch != arch) {
    reject(what, "the value holds something else");
    return std::nullopt;
  }
  core::ImageRecord& img = data->images[0];
  if (Status s = core::check_image(img.bytes, closure); !s) {
    reject(what, s.error().message);
    return std::nullopt;
  }
  (void)store.put_image(img.key, img.format, img.bytes); // a read-only cache still loads it
  ++counters_.remote_hits;
  return std::move(img.bytes);
}

void Tier::publish_job(storage::Store& store, const Hash128& key) {
  std::lock_guard lock(mu_);
  if (config_.read_only || disabled_)
    return;
  core::BundleData data;
  core::BundleData::Job j;
  auto rec = store.get_job(key);
  auto infos = store.artifact_infos(key);
  auto refs = store.job_refs(key);
  if (!rec || !infos || !refs)
    return;
  j.record = rec.take();
  j.refs = refs.take();
  for (const core::ArtifactInfo& i : *infos) {
    auto bytes = store.get_artifact(key, i.format);
    if (!bytes)
      return;
    j.artifacts.push_back({i.format, bytes.take()});
  }
  data.jobs.push_back(std::move(j));
  set(key_of("job", key.hex()), storage::encode_bundle(data));
}

void Tier::publish_closure(const core::ClosureRecord& closure) {
  std::lock_guard lock(mu_);
  if (config_.read_only || disabled_)
    return;
  core::BundleData data;
  data.closures.push_back(closure);
  for (core::ClosureMember& m : data.closures[0].members)
    m.entry.clear(); // filled on read; not part of what the key covers
  set(key_of("closure", closure.key.hex()), storage::encode_bundle(data));
}

void Tier::publish_name(const core::NameRecord& name) {
  std::lock_guard lock(mu_);
  if (config_.read_only || disabled_)
    return;
  core::BundleData data;
  data.names.push_back(name);
  set(key_of("name", name_id(name.name, name.target)), storage::encode_bundle(data));
}

void Tier::publish_image(const core::ImageRecord& image) {
  std::lock_guard lock(mu_);
  if (config_.read_only || disabled_)
    return;
  core::BundleData data;
  data.images.push_back(image);
  set(key_of("image", image.key.closure.hex() + ":" + image.key.arch),
      storage::encode_bundle(data));
}

storage::Counters Tier::take_counters() {
  std::lock_guard lock(mu_);
  storage::Counters out;
  std::swap(out, counters_);
  return out;
}

} // namespace kiln::storage::remote
