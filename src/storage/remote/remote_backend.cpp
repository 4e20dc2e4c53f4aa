// The remote backend factory (storage/remote/remote_backend.h): the URL, else
// $KILN_REMOTE, names the backend; Redis is the only one.
#include "storage/remote/remote_backend.h"

#include "storage/remote/redis.h"

#include <cstdlib>

namespace kiln::storage::remote {

namespace {

Error no_leases(const Backend& b) {
  return make_error(Code::unavailable, b.describe() + " has no leases");
}

} // namespace

Result<bool> Backend::take_lease(const std::string&, const std::string&,
                                 std::chrono::milliseconds) {
  return no_leases(*this);
}

Result<std::vector<bool>> Backend::renew_leases(const std::vector<std::string>&,
                                                const std::string&, std::chrono::milliseconds) {
  return no_leases(*this);
}

Status Backend::release_lease(const std::string&, const std::string&) { return no_leases(*this); }

Result<Remote> configured(const std::string& url, bool read_only) {
  std::string u = url;
  const char* from = "--remote";
  if (u.empty()) {
    const char* env = std::getenv("KILN_REMOTE");
    u = env ? env : "";
    from = "KILN_REMOTE";
  }
  if (u.empty() || u == "off")
    return Remote();
  auto config = parse_redis_url(u);
  if (!config)
    return config.error().context(from);
  const char* ro = std::getenv("KILN_REMOTE_READ_ONLY");
  if (read_only || (ro && std::string(ro) == "1"))
    config->options.read_only = true;
  Remote remote;
  remote.options = config->options;
  remote.backend = std::make_unique<RedisBackend>(config.take());
  return remote;
}

} // namespace kiln::storage::remote
