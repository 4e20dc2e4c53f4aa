// Signed entries (storage/signing.h): the shared secret, its MAC, and the
// one policy that accepts or refuses signed and unsigned input.
//
// The MAC is HMAC-SHA-512-256 (libsodium's crypto_auth construction, through
// its multi-part API so that a secret longer than 32 bytes is used whole).
// Keyed BLAKE2b (crypto_generichash) would serve as well and is faster, but
// the time goes to zstd and SQLite, not to the MAC; HMAC over SHA-512 is the
// one anyone can recompute with standard tools (HMAC-SHA-512, first 32
// bytes) when auditing a bundle, and it takes keys of any length, where
// BLAKE2b caps them at 64 bytes.
#include "storage/signing.h"

#include "support/dynlib.h"
#include "support/files.h"

#include <sodium.h>

#include <cctype>
#include <cstdlib>
#include <mutex>
#include <optional>

namespace kiln::storage {
namespace {

// libsodium, opened when the first key is parsed (support/dynlib.h): a
// process that signs nothing does not map it. The header gives the types
// and constants; every call goes through this table.
struct Sodium {
  decltype(&::sodium_init) init = nullptr;
  decltype(&::sodium_hex2bin) hex2bin = nullptr;
  decltype(&::sodium_base642bin) base642bin = nullptr;
  decltype(&::sodium_memzero) memzero = nullptr;
  decltype(&::crypto_auth_hmacsha512256_init) hmac_init = nullptr;
  decltype(&::crypto_auth_hmacsha512256_update) hmac_update = nullptr;
  decltype(&::crypto_auth_hmacsha512256_final) hmac_final = nullptr;
  decltype(&::crypto_verify_32) verify_32 = nullptr;
};

Sodium na;

Status init_sodium() {
  static std::once_flag once;
  static std::optional<Error> failed;
  std::call_once(once, [] {
    auto lib = open_library(KILN_SODIUM_SONAME, "signing");
    if (!lib) {
      failed = lib.error();
      return;
    }
    void* h = *lib;
    if (!bind_symbol(h, "sodium_init", na.init) ||
        !bind_symbol(h, "sodium_hex2bin", na.hex2bin) ||
        !bind_symbol(h, "sodium_base642bin", na.base642bin) ||
        !bind_symbol(h, "sodium_memzero", na.memzero) ||
        !bind_symbol(h, "crypto_auth_hmacsha512256_init", na.hmac_init) ||
        !bind_symbol(h, "crypto_auth_hmacsha512256_update", na.hmac_update) ||
        !bind_symbol(h, "crypto_auth_hmacsha512256_final", na.hmac_final) ||
        !bind_symbol(h, "crypto_verify_32", na.verify_32)) {
      failed = make_error(Code::unavailable,
                          std::string(KILN_SODIUM_SONAME) + " lacks a function signing calls");
      return;
    }
    // Only fails without a usable random source, which HMAC never needs.
    int rc = na.init();
    (void)rc;
  });
  if (failed)
    return *failed;
  return Status::ok();
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

bool all_hex(std::string_view s) {
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c)))
      return false;
  return true;
}

// The secret's bytes, or nullopt when `text` is neither hex nor base64.
std::optional<std::vector<unsigned char>> decode_secret(std::string_view text) {
  std::vector<unsigned char> out(text.size()); // more than either decoding needs
  size_t len = 0;
  const char* end = nullptr;
  if (text.size() % 2 == 0 && all_hex(text)) {
    if (na.hex2bin(out.data(), out.size(), text.data(), text.size(), nullptr, &len, &end) ==
            0 &&
        end == text.data() + text.size()) {
      out.resize(len);
      return out;
    }
  }
  for (int variant : {sodium_base64_VARIANT_ORIGINAL, sodium_base64_VARIANT_ORIGINAL_NO_PADDING,
                      sodium_base64_VARIANT_URLSAFE, sodium_base64_VARIANT_URLSAFE_NO_PADDING}) {
    if (na.base642bin(out.data(), out.size(), text.data(), text.size(), nullptr, &len, &end,
                          variant) == 0 &&
        end == text.data() + text.size()) {
      out.resize(len);
      return out;
    }
  }
  na.memzero(out.data(), out.size());
  return std::nullopt;
}

} // namespace

Result<SigningKey> SigningKey::parse(std::string_view text, const std::string& source) {
  KILN_TRY(init_sodium());
  std::string from_file;
  std::string where = source;
  text = trim(text);
  if (!text.empty() && text.front() == '@') {
    std::string path(trim(text.substr(1)));
    auto content = read_file(path);
    if (!content)
      return make_error(Code::invalid_argument,
                        source + ": cannot read the key file '" + path + "': " +
                            content.error().message);
    from_file = content.take();
    text = trim(from_file);
    where = source + " (file '" + path + "')";
  }
  auto wipe = [&] {
    if (!from_file.empty())
      na.memzero(from_file.data(), from_file.size());
  };
  if (text.empty()) {
    wipe();
    return make_error(Code::invalid_argument, where + ": the signing key is empty");
  }
  auto secret = decode_secret(text);
  wipe();
  if (!secret)
    return make_error(Code::invalid_argument,
                      where + ": the signing key is neither hex nor base64");
  if (secret->size() < kMinSecretBytes) {
    size_t n = secret->size();
    na.memzero(secret->data(), secret->size());
    return make_error(Code::invalid_argument,
                      where + ": the signing key holds " + std::to_string(n) +
                          " bytes; it needs at least " + std::to_string(kMinSecretBytes));
  }
  return SigningKey(std::move(*secret));
}

SigningKey::~SigningKey() {
  if (!secret_.empty())
    na.memzero(secret_.data(), secret_.size());
}

std::string SigningKey::mac(std::string_view content) const {
  crypto_auth_hmacsha512256_state state;
  na.hmac_init(&state, secret_.data(), secret_.size());
  na.hmac_update(&state, reinterpret_cast<const unsigned char*>(content.data()),
                                   content.size());
  unsigned char out[crypto_auth_hmacsha512256_BYTES];
  na.hmac_final(&state, out);
  na.memzero(&state, sizeof state);
  static_assert(sizeof out == kMacBytes);
  return std::string(reinterpret_cast<const char*>(out), sizeof out);
}

bool SigningKey::verify(std::string_view content, std::string_view mac) const {
  if (mac.size() != kMacBytes)
    return false;
  std::string want = this->mac(content);
  return na.verify_32(reinterpret_cast<const unsigned char*>(want.data()),
                          reinterpret_cast<const unsigned char*>(mac.data())) == 0;
}

Status Signing::check(std::string_view content, std::optional<std::string_view> mac) const {
  if (mac && key) {
    if (!key->verify(content, *mac))
      return make_error(Code::corrupt, "its signature does not match KILN_SIGNING_KEY (signed "
                                       "with another key, or altered since)");
    return Status::ok();
  }
  if (!required)
    return Status::ok();
  if (mac)
    return make_error(Code::corrupt, "signatures are required, and no KILN_SIGNING_KEY is set "
                                     "to check its signature");
  return make_error(Code::corrupt, "it is not signed, and signatures are required "
                                   "(KILN_REQUIRE_SIGNED or the cache's require_signed setting)");
}

Result<Signing> signing_from_env() {
  Signing signing;
  if (const char* text = std::getenv("KILN_SIGNING_KEY"); text && *text) {
    KILN_TRY_ASSIGN(auto key, SigningKey::parse(text, "KILN_SIGNING_KEY"));
    signing.key = std::move(key);
  }
  if (const char* req = std::getenv("KILN_REQUIRE_SIGNED"); req && *req) {
    std::string_view v = req;
    if (v != "0" && v != "1")
      return make_error(Code::invalid_argument, "KILN_REQUIRE_SIGNED must be 0 or 1");
    signing.required = v == "1";
  }
  return signing;
}

Result<Signing> signing_for(Records& store) {
  KILN_TRY_ASSIGN(auto signing, signing_from_env());
  auto setting = store.upkeep().setting("require_signed");
  if (setting)
    signing.required = signing.required || *setting == "1";
  else if (setting.error().code != Code::not_found)
    return setting.error();
  return signing;
}

Result<SignatureRequirement> signatures_required(Records& store) {
  if (const char* req = std::getenv("KILN_REQUIRE_SIGNED"); req && *req) {
    std::string_view v = req;
    if (v != "0" && v != "1")
      return make_error(Code::invalid_argument, "KILN_REQUIRE_SIGNED must be 0 or 1");
    if (v == "1")
      return SignatureRequirement{true, "KILN_REQUIRE_SIGNED"};
  }
  auto setting = store.upkeep().setting("require_signed");
  if (setting)
    return SignatureRequirement{*setting == "1", "setting"};
  if (setting.error().code != Code::not_found)
    return setting.error();
  return SignatureRequirement{false, "default"};
}

} // namespace kiln::storage
