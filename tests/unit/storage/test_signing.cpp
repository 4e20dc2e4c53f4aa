// Unit tests for signed entries (src/storage/signing.cpp and the bundle
// envelope's MAC trailer): key parsing (hex, base64, @file; errors that never
// show the key), MACs that verify only under their key and content, and the
// policy that accepts or refuses signed and unsigned bundles.
#include "storage/signing.h"

#include "fixtures/cache.hpp"
#include "fixtures/env.hpp"
#include "storage/bundle.h"
#include "storage/usage.h"

#include <doctest/doctest.h>

#include <fstream>
#include <string>

using namespace kiln;
using namespace kiln::storage;
using namespace kiln::test;

namespace {

// 32 bytes each, hex.
const std::string kKeyA = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
const std::string kKeyB = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

SigningKey key(const std::string& text) {
  auto k = SigningKey::parse(text, "test key");
  INFO((k ? std::string() : k.error().message));
  REQUIRE(k);
  return k.take();
}

BundleData sample() {
  BundleData b;
  b.names.push_back({"f", "host", hash128("closure")});
  b.images.push_back({{hash128("closure"), "x86_64-linux", "lld 22"}, "so", std::string(500, 'i')});
  return b;
}

Signing signing(std::optional<std::string> k, bool required) {
  Signing s;
  if (k)
    s.key = key(*k);
  s.required = required;
  return s;
}

} // namespace

TEST_CASE("signing: hex, base64 and @file keys decode to the same secret") {
  // The same 32 bytes as kKeyA in base64, padded and not, standard and URL-safe.
  const std::string b64 = "ABEiM0RVZneImaq7zN3u/wARIjNEVWZ3iJmqu8zd7v8=";
  const std::string b64url = "ABEiM0RVZneImaq7zN3u_wARIjNEVWZ3iJmqu8zd7v8";
  SigningKey hex = key(kKeyA);
  std::string m = hex.mac("content");
  CHECK(m.size() == kMacBytes);
  CHECK(key(b64).mac("content") == m);
  CHECK(key(b64url).mac("content") == m);
  CHECK(key("  " + kKeyA + "\n").mac("content") == m);

  TempDir dir = TempDir::create("kiln-signing").take();
  std::string file = dir.path() + "/key";
  std::ofstream(file) << kKeyA << "\n";
  CHECK(key("@" + file).mac("content") == m);
  // Another key, another MAC; a longer secret is used whole.
  CHECK(key(kKeyB).mac("content") != m);
  CHECK(key(kKeyA + "01").mac("content") != m);
}

TEST_CASE("signing: malformed keys are refused without showing the key") {
  const std::string short_key = "00112233445566778899aabbccddeeff"; // 16 bytes
  const std::string not_encoded = "this is not a key, it has spaces and ** in it!!";
  for (const std::string& bad : {short_key, not_encoded, std::string(""), std::string("   ")}) {
    auto k = SigningKey::parse(bad, "KILN_SIGNING_KEY");
    REQUIRE_FALSE(k);
    INFO(k.error().message);
    CHECK(k.error().code == Code::invalid_argument);
    CHECK(k.error().message.find("KILN_SIGNING_KEY") != std::string::npos);
    if (!bad.empty() && bad != "   ")
      CHECK(k.error().message.find(bad) == std::string::npos);
  }
  auto k = SigningKey::parse(short_key, "KILN_SIGNING_KEY");
  CHECK(k.error().message.find("at least 32") != std::string::npos);

  // A key file that holds a short key, or none at all.
  TempDir dir = TempDir::create("kiln-signing").take();
  std::string file = dir.path() + "/key";
  std::ofstream(file) << short_key;
  auto from_file = SigningKey::parse("@" + file, "KILN_SIGNING_KEY");
  REQUIRE_FALSE(from_file);
  CHECK(from_file.error().message.find(short_key) == std::string::npos);
  CHECK(from_file.error().message.find(file) != std::string::npos);
  auto missing = SigningKey::parse("@" + dir.path() + "/none", "KILN_SIGNING_KEY");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == Code::invalid_argument);
}

TEST_CASE("signing: a MAC verifies under its key and content only") {
  SigningKey a = key(kKeyA);
  SigningKey b = key(kKeyB);
  std::string content = "the bytes of an entry";
  std::string m = a.mac(content);
  CHECK(a.verify(content, m));
  CHECK_FALSE(b.verify(content, m));
  std::string tampered = content;
  tampered[3] = char(tampered[3] ^ 1);
  CHECK_FALSE(a.verify(tampered, m));
  std::string bad_mac = m;
  bad_mac[31] = char(bad_mac[31] ^ 1);
  CHECK_FALSE(a.verify(content, bad_mac));
  CHECK_FALSE(a.verify(content, m.substr(0, 16)));
}

TEST_CASE("signing: signed bundles decode under the key; refusals follow the requirement") {
  SigningKey a = key(kKeyA);
  std::string unsigned_bytes = encode_bundle(sample());
  std::string signed_bytes = encode_bundle(sample(), &a);
  // Unsigned bundles keep version 1, byte for byte; signed ones are 2.
  CHECK(unsigned_bytes == encode_bundle(sample(), nullptr));
  CHECK(uint8_t(unsigned_bytes[8]) == kBundleVersion);
  CHECK(uint8_t(signed_bytes[8]) == kSignedBundleVersion);
  CHECK(signed_bytes.size() == unsigned_bytes.size() + kMacBytes);

  auto accepted = [](const std::string& bytes, const Signing& s) {
    auto r = decode_bundle(bytes, s);
    if (r)
      CHECK(r->images.at(0).bytes == std::string(500, 'i'));
    return bool(r);
  };
  auto refused_why = [](const std::string& bytes, const Signing& s) {
    auto r = decode_bundle(bytes, s);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == Code::corrupt);
    return r.error().message;
  };

  // No key, no requirement: everything is accepted (the MAC is not checked).
  CHECK(accepted(unsigned_bytes, {}));
  CHECK(accepted(signed_bytes, {}));
  // A key without the requirement: unsigned accepted, signed verified.
  CHECK(accepted(unsigned_bytes, signing(kKeyA, false)));
  CHECK(accepted(signed_bytes, signing(kKeyA, false)));
  CHECK(refused_why(signed_bytes, signing(kKeyB, false)).find("signature does not match") !=
        std::string::npos);
  // Required: only a bundle signed with the key.
  CHECK(accepted(signed_bytes, signing(kKeyA, true)));
  CHECK(refused_why(unsigned_bytes, signing(kKeyA, true)).find("not signed") !=
        std::string::npos);
  CHECK(refused_why(signed_bytes, signing(kKeyB, true)).find("does not match") !=
        std::string::npos);
  CHECK(refused_why(signed_bytes, signing(std::nullopt, true)).find("no KILN_SIGNING_KEY") !=
        std::string::npos);

  // Any byte changed, the header and the MAC included, is refused under the key.
  for (size_t at : {size_t(8), size_t(12), size_t(40), signed_bytes.size() - kMacBytes - 1,
                    signed_bytes.size() - 1}) {
    std::string tampered = signed_bytes;
    tampered[at] = char(tampered[at] ^ 0x01);
    INFO("byte " << at);
    CHECK_FALSE(decode_bundle(tampered, signing(kKeyA, false)));
  }
  // Stripping the MAC and calling it version 1 gives an unsigned bundle,
  // which the requirement refuses.
  std::string stripped = signed_bytes.substr(0, signed_bytes.size() - kMacBytes);
  stripped[8] = char(kBundleVersion);
  CHECK(accepted(stripped, signing(kKeyA, false)));
  CHECK_FALSE(decode_bundle(stripped, signing(kKeyA, true)));
  // Too short to hold a MAC.
  CHECK_FALSE(decode_bundle(signed_bytes.substr(0, 40), {}));
}

TEST_CASE("signing: the environment and the cache's require_signed setting") {
  TempDir dir = TempDir::create("kiln-signing").take();
  auto store = open_store(cache_file(dir));
  {
    EnvVar k("KILN_SIGNING_KEY", nullptr);
    EnvVar r("KILN_REQUIRE_SIGNED", nullptr);
    auto s = signing_for(*store);
    REQUIRE(s);
    CHECK_FALSE(s->key);
    CHECK_FALSE(s->required);
  }
  {
    EnvVar k("KILN_SIGNING_KEY", kKeyA);
    EnvVar r("KILN_REQUIRE_SIGNED", "1");
    auto s = signing_for(*store);
    REQUIRE(s);
    REQUIRE(s->key);
    CHECK(s->key->mac("x") == key(kKeyA).mac("x"));
    CHECK(s->required);
  }
  {
    EnvVar k("KILN_SIGNING_KEY", "0011");
    auto s = signing_from_env();
    REQUIRE_FALSE(s);
    CHECK(s.error().code == Code::invalid_argument);
    CHECK(s.error().message.find("0011") == std::string::npos);
  }
  {
    EnvVar r("KILN_REQUIRE_SIGNED", "yes");
    CHECK_FALSE(signing_from_env());
  }
  // The setting, as kiln-inspect config stores it.
  CHECK_FALSE(parse_setting("require_signed", "2"));
  auto v = parse_setting("require_signed", "1");
  REQUIRE(v);
  REQUIRE(store->upkeep().set_setting("require_signed", *v));
  {
    EnvVar k("KILN_SIGNING_KEY", nullptr);
    EnvVar r("KILN_REQUIRE_SIGNED", nullptr);
    auto s = signing_for(*store);
    REQUIRE(s);
    CHECK(s->required);
  }
  REQUIRE(store->upkeep().set_setting("require_signed", "0"));
  {
    EnvVar r("KILN_REQUIRE_SIGNED", nullptr);
    auto s = signing_for(*store);
    REQUIRE(s);
    CHECK_FALSE(s->required);
  }
}
