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

#include "support/files.h"

#include <sodium.h>

#include <cctype>
#include <cstdlib>
#include <mutex>

namespace kiln::storage {
namespace {

void init_sodium() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Only fails without a usable random source, which HMAC never needs.
    int rc = sodium_init();
    (void)rc;
  });
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
    if (sodium_hex2bin(out.data(), out.size(), text.data(), text.size(), nullptr, &len, &end) ==
            0 &&
        end == text.data() + text.size()) {
      out.resize(len);
      return out;
    }
  }
  for (int variant : {sodium_base64_VARIANT_ORIGINAL, sodium_base64_VARIANT_ORIGINAL_NO_PADDING,
                      sodium_base64_VARIANT_URLSAFE, sodium_base64_VARIANT_URLSAFE_NO_PADDING}) {
    if (sodium_base642bin(out.data(), out.size(), text.data(), text.size(), nullptr, &len, &end,
                          variant) == 0 &&
        end == text.data() + text.size()) {
      out.resize(len);
      return out;
    }
  }
  sodium_memzero(out.data(), out.size());
  return std::nullopt;
}

} // namespace

Result<SigningKey> SigningKey::parse(std::string_view text, const std::string& source) {
  init_sodium();
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
      sodium_memzero(from_file.data(), from_file.size());
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
    sodium_memzero(secret->data(), secret->size());
    return make_error(Code::invalid_argument,
                      where + ": the signing key holds " + std::to_string(n) +
                          " bytes; it needs at least " + std::to_string(kMinSecretBytes));
  }
  return SigningKey(std::move(*secret));
}

SigningKey::~SigningKey() {
  if (!secret_.empty())
    sodium_memzero(secret_.data(), secret_.size());
}

std::string SigningKey::mac(std::string_view content) const {
  crypto_auth_hmacsha512256_state state;
  crypto_auth_hmacsha512256_init(&state, secret_.data(), secret_.size());
  crypto_auth_hmacsha512256_update(&state, reinterpret_cast<const unsigned char*>(content.data()),
                                   content.size());
  unsigned char out[crypto_auth_hmacsha512256_BYTES];
  crypto_auth_hmacsha512256_final(&state, out);
  sodium_memzero(&state, sizeof state);
  static_assert(sizeof out == kMacBytes);
  return std::string(reinterpret_cast<const char*>(out), sizeof out);
}

bool SigningKey::verify(std::string_view content, std::string_view mac) const {
  if (mac.size() != kMacBytes)
    return false;
  std::string want = this->mac(content);
  return crypto_verify_32(reinterpret_cast<const unsigned char*>(want.data()),
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

Result<Signing> signing_for(Store& store) {
  KILN_TRY_ASSIGN(auto signing, signing_from_env());
  auto setting = store.setting("require_signed");
  if (setting)
    signing.required = signing.required || *setting == "1";
  else if (setting.error().code != Code::not_found)
    return setting.error();
  return signing;
}

Result<SignatureRequirement> signatures_required(Store& store) {
  if (const char* req = std::getenv("KILN_REQUIRE_SIGNED"); req && *req) {
    std::string_view v = req;
    if (v != "0" && v != "1")
      return make_error(Code::invalid_argument, "KILN_REQUIRE_SIGNED must be 0 or 1");
    if (v == "1")
      return SignatureRequirement{true, "KILN_REQUIRE_SIGNED"};
  }
  auto setting = store.setting("require_signed");
  if (setting)
    return SignatureRequirement{*setting == "1", "setting"};
  if (setting.error().code != Code::not_found)
    return setting.error();
  return SignatureRequirement{false, "default"};
}

} // namespace kiln::storage
