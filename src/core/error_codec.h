// One encoding of an Error for every message that carries one (the code
// generation worker's responses, the compiler plugin's replies): its fields
// in one order, and a code read back only as one of Code's values (any
// other number is `internal`), so that a new field is added once.
#pragma once

#include <kiln/result.hpp>

namespace kiln {

/// The Code a number names; `internal` for any number that names none.
inline Code code_from_number(int value) {
  for (Code c : {Code::ok, Code::not_found, Code::invalid_argument, Code::unavailable,
                 Code::corrupt, Code::internal})
    if (int(c) == value)
      return c;
  return Code::internal;
}

// cereal finds these by argument-dependent lookup: Error is kiln's.
template <class A> void save(A& a, const Error& e) {
  a(int(e.code), e.message, e.entry, e.target, e.source, e.line, e.column, e.job);
}
template <class A> void load(A& a, Error& e) {
  int code = 0;
  a(code, e.message, e.entry, e.target, e.source, e.line, e.column, e.job);
  e.code = code_from_number(code);
}

} // namespace kiln
