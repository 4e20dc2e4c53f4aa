// Signed entries: a MAC with a secret shared by every trusted writer, over
// the whole of a bundle or remote value. Checksums and key recomputation
// catch damage and mismatched records, but anyone who can write the cache
// file, a bundle or the remote can substitute code (a key names the input,
// not the output); a MAC ties the bytes to a holder of the secret. Every
// decision on whether signed or unsigned input is accepted is made here.
//
// The secret comes from $KILN_SIGNING_KEY: hex (only hex digits, even
// length) else base64 (standard or URL-safe, padded or not), or "@FILE" for
// a file that holds such a string; at least 32 bytes once decoded. Signatures
// are required by $KILN_REQUIRE_SIGNED=1 or the cache's require_signed
// setting. No message ever shows the secret.
#pragma once

#include "storage/records.h"

#include <kiln/result.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::storage {

/// Bytes of a MAC (HMAC-SHA-512-256).
inline constexpr size_t kMacBytes = 32;
/// Fewest bytes a secret may have.
inline constexpr size_t kMinSecretBytes = 32;

/// A shared secret. Its bytes are wiped when it is destroyed.
class SigningKey {
public:
  /// Decodes a secret as $KILN_SIGNING_KEY holds it (see above). Errors are
  /// `invalid_argument` and name `source` (e.g. "KILN_SIGNING_KEY"), never
  /// the secret.
  static Result<SigningKey> parse(std::string_view text, const std::string& source);

  SigningKey(const SigningKey& other) = default;
  SigningKey& operator=(const SigningKey& other) = default;
  ~SigningKey();

  /// The MAC of `content`: kMacBytes bytes.
  std::string mac(std::string_view content) const;
  /// Whether `mac` is content's MAC under this key (constant time).
  bool verify(std::string_view content, std::string_view mac) const;

private:
  explicit SigningKey(std::vector<unsigned char> secret) : secret_(std::move(secret)) {}
  std::vector<unsigned char> secret_;
};

/// How entries are signed and checked: the key, if any, signs what is
/// written and verifies what is read; `required` refuses unsigned input.
struct Signing {
  std::optional<SigningKey> key;
  bool required = false;

  /// Whether input of `content` with `mac` (nullopt: unsigned) is accepted:
  /// a signed one is verified when there is a key, and a wrong MAC is always
  /// refused; an unsigned one, or a signed one without a key to check it,
  /// only when signatures are not required. Refusals are `corrupt` (what
  /// was read is not to be trusted), with a message saying why.
  Status check(std::string_view content, std::optional<std::string_view> mac) const;
};

/// Signing as the environment sets it: $KILN_SIGNING_KEY and
/// $KILN_REQUIRE_SIGNED ("1" requires; "0", empty or unset does not).
Result<Signing> signing_from_env();

/// Signing for work on `store`: the environment's, required also when the
/// cache's require_signed setting is 1.
Result<Signing> signing_for(Records& store);

/// Whether `store` requires signatures and what says so: "KILN_REQUIRE_SIGNED",
/// "setting" or "default". For display; signing_for decides.
struct SignatureRequirement {
  bool required = false;
  std::string source;
};
Result<SignatureRequirement> signatures_required(Records& store);

} // namespace kiln::storage
