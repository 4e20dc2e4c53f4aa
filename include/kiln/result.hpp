// Kiln's one error model: a status code that tells the caller what kind of
// failure it was (and so whether retrying or recompiling can help), plus a
// message carrying the context a user needs to act on it.
#pragma once

#include <kiln/kiln.h>

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace kiln {

enum class Code {
  ok = KILN_OK,
  not_found = KILN_NOT_FOUND,
  invalid_argument = KILN_INVALID_ARGUMENT,
  unavailable = KILN_UNAVAILABLE,
  corrupt = KILN_CORRUPT,
  internal = KILN_INTERNAL,
};

/// A failure: what kind, and a message with its context.
struct Error {
  Code code = Code::internal;
  std::string message;

  /// Returns a copy whose message is prefixed with `context: `.
  Error context(const std::string& ctx) const { return {code, ctx + ": " + message}; }
};

inline Error make_error(Code code, std::string message) { return {code, std::move(message)}; }

/// Either a value or an Error. Check with `if (!r)` before using `*r`.
template <typename T> class [[nodiscard]] Result {
public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error error) : v_(std::move(error)) {}

  explicit operator bool() const { return v_.index() == 0; }
  T& operator*() { return std::get<0>(v_); }
  const T& operator*() const { return std::get<0>(v_); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  const Error& error() const { return std::get<1>(v_); }
  T take() { return std::move(std::get<0>(v_)); }

private:
  std::variant<T, Error> v_;
};

/// Result of an operation with no value.
class [[nodiscard]] Status {
public:
  Status() = default;
  Status(Error error) : e_(std::move(error)) {}
  static Status ok() { return {}; }

  explicit operator bool() const { return !e_.has_value(); }
  const Error& error() const { return *e_; }

private:
  std::optional<Error> e_;
};

} // namespace kiln

/// Inside functions returning Result<T> or Status: propagate a failure.
#define KILN_TRY(expr)                                                                             \
  do {                                                                                             \
    auto&& kiln_try_r_ = (expr);                                                                   \
    if (!kiln_try_r_)                                                                              \
      return kiln_try_r_.error();                                                                  \
  } while (0)
