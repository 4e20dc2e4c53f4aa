// Kiln's one error model: a status code that tells the caller what kind of
// failure it was (and so whether retrying or recompiling can help), a
// message carrying the context a user needs to act on it, and fields set
// where it arose (input, line, entry, target, job) that programs read
// instead of the message.
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

/// A failure: what kind, a message with its context, and the fields that
/// say where it arose (empty / 0 where it concerns none). The fields are set
/// where the error arises and survive context(); the setters fill a field
/// only while it is empty, so the innermost (most precise) origin wins.
struct Error {
  Code code = Code::internal;
  std::string message;
  std::string entry;   ///< the entry (root or job) it is about
  std::string target;  ///< the target spec it is about
  std::string source;  ///< the input (file path or buffer name) it is about
  unsigned line = 0;   ///< 1-based line in `source`, or 0
  unsigned column = 0; ///< 1-based column in `source`, or 0
  std::string job;     ///< the key (32 hex) of the job it is about

  Error() = default;
  Error(Code c, std::string m) : code(c), message(std::move(m)) {}

  /// Returns a copy whose message is prefixed with `context: `; the fields are kept.
  Error context(const std::string& ctx) const& { return Error(*this).context(ctx); }
  Error context(const std::string& ctx) && {
    message = ctx + ": " + message;
    return std::move(*this);
  }

  /// Sets `entry` unless it is set.
  Error with_entry(std::string e) const& { return Error(*this).with_entry(std::move(e)); }
  Error with_entry(std::string e) && {
    if (entry.empty())
      entry = std::move(e);
    return std::move(*this);
  }

  /// Sets `target` unless it is set.
  Error with_target(std::string t) const& { return Error(*this).with_target(std::move(t)); }
  Error with_target(std::string t) && {
    if (target.empty())
      target = std::move(t);
    return std::move(*this);
  }

  /// Sets `job` (a key, 32 hex) unless it is set.
  Error with_job(std::string key) const& { return Error(*this).with_job(std::move(key)); }
  Error with_job(std::string key) && {
    if (job.empty())
      job = std::move(key);
    return std::move(*this);
  }

  /// Sets the position (input, 1-based line and column; 0: unknown) unless
  /// one is set. A line for the input already named fills in its line.
  Error at(std::string src, unsigned ln = 0, unsigned col = 0) const& {
    return Error(*this).at(std::move(src), ln, col);
  }
  Error at(std::string src, unsigned ln = 0, unsigned col = 0) && {
    if (source.empty() || (source == src && line == 0)) {
      source = std::move(src);
      line = ln;
      column = ln ? col : 0;
    }
    return std::move(*this);
  }
};

/// Cold: the paths that make an error (most of them build its message) are
/// laid out apart from the paths that succeed.
[[gnu::cold]] inline Error make_error(Code code, std::string message) {
  return {code, std::move(message)};
}

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

#define KILN_TRY_CONCAT_(a, b) a##b
#define KILN_TRY_CONCAT(a, b) KILN_TRY_CONCAT_(a, b)

/// Inside functions returning Result<T> or Status: evaluates `expr` (a
/// Result), propagates its failure unchanged, else moves its value into
/// `decl`: `KILN_TRY_ASSIGN(auto store, Store::open(path));`. A statement,
/// not an expression: it declares a hidden temporary in the current scope.
#define KILN_TRY_ASSIGN(decl, expr)                                                                \
  KILN_TRY_ASSIGN_IMPL_(KILN_TRY_CONCAT(kiln_try_v_, __LINE__), decl, expr)
#define KILN_TRY_ASSIGN_IMPL_(tmp, decl, expr)                                                     \
  auto tmp = (expr);                                                                               \
  if (!tmp)                                                                                        \
    return tmp.error();                                                                            \
  decl = tmp.take()
