#include "link/ptx_merge.h"

#include <cctype>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::link {

namespace {

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}

// Past whitespace and comments from `p`; npos for an unterminated comment.
size_t skip_trivia(std::string_view s, size_t p) {
  while (p < s.size()) {
    char c = s[p];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++p;
    } else if (c == '/' && p + 1 < s.size() && s[p + 1] == '/') {
      size_t e = s.find('\n', p);
      p = e == std::string_view::npos ? s.size() : e + 1;
    } else if (c == '/' && p + 1 < s.size() && s[p + 1] == '*') {
      size_t e = s.find("*/", p + 2);
      if (e == std::string_view::npos)
        return std::string_view::npos;
      p = e + 2;
    } else {
      break;
    }
  }
  return p;
}

// Past a string literal starting at `p` (a '"'); npos if unterminated.
size_t skip_string(std::string_view s, size_t p) {
  for (++p; p < s.size(); ++p) {
    if (s[p] == '\\')
      ++p;
    else if (s[p] == '"')
      return p + 1;
  }
  return std::string_view::npos;
}

/// One module-scope statement: a header directive, a function (prototype or
/// definition) or a variable.
struct Stmt {
  enum Kind { header, func, var } kind = header;
  enum Link { internal, visible, weak, external } link = internal;
  size_t begin = 0, end = 0; ///< its text in the module
  size_t extern_at = 0;      ///< where ".extern" is, for an external one
  std::string name;
  bool body = false;  ///< a function's definition (not a prototype)
  bool entry = false; ///< a kernel (.entry): its name is how it is found
};

/// Calls f(begin, end) for each identifier of `s` outside comments and
/// strings, and not a directive (".u32") or a number's tail.
template <typename F> bool for_each_ident(std::string_view s, F&& f) {
  for (size_t p = 0; p < s.size();) {
    char c = s[p];
    if (c == '/' && p + 1 < s.size() && (s[p + 1] == '/' || s[p + 1] == '*')) {
      p = skip_trivia(s, p);
      if (p == std::string_view::npos)
        return false;
    } else if (c == '"') {
      p = skip_string(s, p);
      if (p == std::string_view::npos)
        return false;
    } else if (c == '.' || std::isdigit(static_cast<unsigned char>(c))) {
      // A directive or a number: its whole word is not an identifier.
      for (++p; p < s.size() && (ident_char(s[p]) || s[p] == '.'); ++p) {
      }
    } else if (ident_start(c)) {
      size_t b = p;
      for (++p; p < s.size() && ident_char(s[p]); ++p) {
      }
      // A word followed by '.' is an instruction and its type ("max.s32"):
      // PTX names hold no '.'.
      if (p >= s.size() || s[p] != '.')
        f(b, p);
    } else {
      ++p;
    }
  }
  return true;
}

class Reader {
public:
  Reader(std::string_view text, std::string& why) : s_(text), why_(why) {}

  bool read(std::vector<Stmt>& out) {
    for (size_t p = skip_trivia(s_, 0); p < s_.size(); p = skip_trivia(s_, p)) {
      Stmt st;
      if (!statement(p, st))
        return false;
      p = st.end;
      out.push_back(std::move(st));
    }
    return true; // npos: an unterminated comment, refused by for_each_ident
  }

private:
  bool fail(const std::string& what) {
    why_ = what;
    return false;
  }

  // The directive words (".visible", ".func") leading the statement at `p`.
  std::vector<std::string> directives(size_t p) const {
    std::vector<std::string> out;
    while (p < s_.size() && s_[p] == '.') {
      size_t b = ++p;
      while (p < s_.size() && ident_char(s_[p]))
        ++p;
      out.emplace_back(s_.substr(b, p - b));
      size_t q = skip_trivia(s_, p);
      if (q == std::string_view::npos)
        break;
      p = q;
    }
    return out;
  }

  // The end of the statement starting at `b`: past its ';' at depth 0, or
  // past a function body's closing '}'.
  bool statement_end(size_t b, size_t& end) const {
    int braces = 0, parens = 0;
    for (size_t p = b; p < s_.size();) {
      char c = s_[p];
      if (c == '/' && p + 1 < s_.size() && (s_[p + 1] == '/' || s_[p + 1] == '*')) {
        p = skip_trivia(s_, p);
        if (p == std::string_view::npos)
          return false;
        continue;
      }
      if (c == '"') {
        p = skip_string(s_, p);
        if (p == std::string_view::npos)
          return false;
        continue;
      }
      ++p;
      if (c == '(')
        ++parens;
      else if (c == ')' && --parens < 0)
        return false;
      else if (c == '{')
        ++braces;
      else if (c == '}') {
        if (--braces < 0)
          return false;
        if (braces == 0 && parens == 0) {
          // An initializer's "= {...};" goes on to its ';'; a body ends here.
          size_t q = skip_trivia(s_, p);
          if (q == std::string_view::npos || q >= s_.size() || s_[q] != ';') {
            end = p;
            return true;
          }
        }
      } else if (c == ';' && braces == 0 && parens == 0) {
        end = p;
        return true;
      }
    }
    return false;
  }

  // A header directive's line (st.begin = b): its arguments (numbers,
  // names, commas) and perhaps a comment, nothing else, as no other
  // statement may hide in a line that is dropped from every module but the
  // first.
  bool header_line(size_t b, const std::string& first, Stmt& st) {
    size_t e = s_.find('\n', b);
    st.end = e == std::string_view::npos ? s_.size() : e;
    st.kind = Stmt::header;
    std::string_view line = s_.substr(b + 1 + first.size(), st.end - b - 1 - first.size());
    if (size_t c = line.find("//"); c != std::string_view::npos)
      line = line.substr(0, c);
    for (size_t i = 0; i < line.size(); ++i) {
      char c = line[i];
      bool ok = ident_char(c) || c == ',' || c == ' ' || c == '\t' || c == '\r' ||
                (c == '.' && i > 0 && std::isdigit(static_cast<unsigned char>(line[i - 1])));
      if (!ok)
        return fail("a ." + first + " line at byte " + std::to_string(b) +
                    " holds more than its arguments");
    }
    return true;
  }

  // A function statement's name (`text`, at byte b): past the keyword and
  // an optional return parameter list.
  bool function_statement(size_t b, std::string_view text, bool entry, Stmt& st) {
    st.kind = Stmt::func;
    st.entry = entry;
    size_t k = text.find(entry ? ".entry" : ".func");
    size_t p = skip_trivia(text, k + (entry ? 6 : 5));
    if (p != std::string_view::npos && p < text.size() && text[p] == '(') {
      p = text.find(')', p);
      p = p == std::string_view::npos ? p : skip_trivia(text, p + 1);
    }
    if (p == std::string_view::npos || p >= text.size() || !ident_start(text[p]))
      return fail("a function statement at byte " + std::to_string(b) + " has no name");
    size_t e = p;
    while (e < text.size() && ident_char(text[e]))
      ++e;
    st.name = std::string(text.substr(p, e - p));
    st.body = text.back() == '}';
    return true;
  }

  // A variable statement's name (`text`, at byte b): the last identifier
  // before '[', '=' or ';'.
  bool variable_statement(size_t b, std::string_view text, Stmt& st) {
    st.kind = Stmt::var;
    size_t stop = text.find_first_of("[=;");
    std::string_view head = text.substr(0, stop);
    if (head.find(',') != std::string_view::npos)
      return fail("a statement at byte " + std::to_string(b) + " declares several variables");
    if (!for_each_ident(head, [&](size_t ib, size_t ie) {
          st.name = std::string(head.substr(ib, ie - ib));
        }) ||
        st.name.empty())
      return fail("a variable statement at byte " + std::to_string(b) + " has no name");
    return true;
  }

  bool statement(size_t b, Stmt& st) {
    st.begin = b;
    if (s_[b] != '.')
      return fail("a module-scope statement at byte " + std::to_string(b) +
                  " does not start with a directive");
    std::vector<std::string> dirs = directives(b);
    const std::string& first = dirs.front();
    if (first == "version" || first == "target" || first == "address_size")
      return header_line(b, first, st);
    auto has = [&](const char* d) {
      for (const std::string& x : dirs)
        if (x == d)
          return true;
      return false;
    };
    for (const char* d : {"file", "section", "common", "alias", "pragma", "loc"})
      if (has(d))
        return fail(std::string("a module-scope .") + d + " directive");
    if (!statement_end(b, st.end))
      return fail("unbalanced statement at byte " + std::to_string(b));
    std::string_view text = s_.substr(b, st.end - b);
    st.link = has("extern")    ? Stmt::external
              : has("visible") ? Stmt::visible
              : has("weak")    ? Stmt::weak
                               : Stmt::internal;
    if (st.link == Stmt::external)
      st.extern_at = b + text.find(".extern");
    if (has("func") || has("entry"))
      return function_statement(b, text, has("entry"), st);
    if (has("global") || has("const") || has("shared") || has("local"))
      return variable_statement(b, text, st);
    return fail("a module-scope statement at byte " + std::to_string(b) + " of unknown kind ." +
                first);
  }

  std::string_view s_;
  std::string& why_;
};

// PTX instructions that may stand without a type suffix ("ret;", "exit;"):
// a module-scope name spelled so is not renamed (the merge is refused).
bool is_bare_instruction(const std::string& w) {
  static const std::set<std::string> words = {
      "abs",   "activemask", "add",   "and",  "atom",  "bar",     "barrier", "bfe",    "bfi",
      "bfind", "bra",        "brev",  "brkpt", "call", "clz",     "cnot",    "copysign", "cos",
      "cvt",   "cvta",       "div",   "elect", "ex2",  "exit",    "fence",   "fma",    "isspacep",
      "ld",    "ldu",        "lg2",   "lop3", "mad",   "max",     "membar",  "min",    "mov",
      "mul",   "nanosleep",  "neg",   "not",  "or",    "pmevent", "popc",    "prefetch", "prmt",
      "rcp",   "red",        "rem",   "ret",  "rsqrt", "sad",     "selp",    "set",    "setp",
      "shf",   "shfl",       "shl",   "shr",  "sin",   "slct",    "sqrt",    "st",     "sub",
      "suld",  "sust",       "tanh",  "testp", "tex",  "tld4",    "trap",    "txq",    "vote",
      "xor"};
  return words.count(w) > 0;
}

std::string normalized(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space)
      out += ' ';
    space = false;
    out += c;
  }
  return out;
}

/// Who defines a .visible or .weak name: the first module to.
struct Def {
  size_t module;
  Stmt::Kind kind;
  Stmt::Link link;
  std::string text; ///< normalized, for a repeated .weak definition
};

/// One merge, stage by stage: each stage reads what the earlier ones found
/// and returns false with `why` set when the modules cannot be merged.
class Merger {
public:
  explicit Merger(const std::vector<const std::string*>& modules)
      : modules_(modules), n_(modules.size()), stmts_(n_), names_(n_), drop_(n_), renames_(n_),
        linkage_of_(n_) {}

  bool read();
  bool check_headers();
  bool find_definitions();
  bool plan_renames();
  bool resolve_declarations();
  std::string write() const;

  std::string why;

private:
  bool no(const std::string& what) {
    why = what;
    return false;
  }
  std::string normalized_text(size_t i, const Stmt& st) const {
    return normalized(std::string_view(*modules_[i]).substr(st.begin, st.end - st.begin));
  }
  std::string header_of(size_t i) const;
  void drop_weak_repeat(size_t i, size_t k);
  void write_statement(size_t i, size_t k, std::string& out) const;

  const std::vector<const std::string*>& modules_;
  const size_t n_;
  std::vector<std::vector<Stmt>> stmts_;
  std::set<std::string> idents_; ///< every identifier of every module
  std::map<std::string, Def> defined_;
  std::vector<std::set<std::string>> names_; ///< each module's module-scope names
  std::vector<std::vector<bool>> drop_;
  std::vector<std::map<std::string, std::string>> renames_;
  std::vector<std::map<size_t, std::string>> linkage_of_; ///< stmt -> ".visible"/".weak"
};

// Each module's statements, and every identifier any module uses.
bool Merger::read() {
  std::string reason;
  for (size_t i = 0; i < n_; ++i) {
    std::string_view text = *modules_[i];
    Reader r(text, reason);
    if (!r.read(stmts_[i]))
      return no("module " + std::to_string(i) + ": " + reason);
    if (!for_each_ident(text, [&](size_t b, size_t e) {
          idents_.emplace(text.substr(b, e - b));
        }))
      return no("module " + std::to_string(i) + ": an unterminated comment or string");
  }
  return true;
}

std::string Merger::header_of(size_t i) const {
  std::string h;
  bool body = false;
  for (const Stmt& st : stmts_[i]) {
    if (st.kind != Stmt::header) {
      body = true;
      continue;
    }
    if (body)
      return std::string("\x01"); // a header directive after the body
    h += normalized_text(i, st) + "\n";
  }
  return h;
}

// One header for all: every module's own, the same.
bool Merger::check_headers() {
  const std::string header = header_of(0);
  if (header.find(".target") == std::string::npos)
    return no("module 0 has no .target");
  for (size_t i = 1; i < n_; ++i)
    if (header_of(i) != header)
      return no("module " + std::to_string(i) + "'s .version, .target or .address_size differ");
  return true;
}

// One copy of the same .weak definition (statement k of module i), and none
// of that module's own declarations of it, which would come after the kept
// definition (ptxas refuses that).
void Merger::drop_weak_repeat(size_t i, size_t k) {
  const std::string& name = stmts_[i][k].name;
  drop_[i][k] = true;
  for (size_t q = 0; q < stmts_[i].size(); ++q)
    if (stmts_[i][q].name == name && stmts_[i][q].kind == Stmt::func && !stmts_[i][q].body &&
        stmts_[i][q].link != Stmt::external)
      drop_[i][q] = true;
}

// Who defines what: the first module to define a .visible or .weak name;
// and each module's module-scope names. Headers after the first module's
// are dropped.
bool Merger::find_definitions() {
  for (size_t i = 0; i < n_; ++i) {
    drop_[i].assign(stmts_[i].size(), false);
    for (size_t k = 0; k < stmts_[i].size(); ++k) {
      const Stmt& st = stmts_[i][k];
      if (st.kind == Stmt::header) {
        drop_[i][k] = i > 0;
        continue;
      }
      names_[i].insert(st.name);
      if (st.link == Stmt::external || st.link == Stmt::internal)
        continue;
      bool definition = st.kind == Stmt::var || st.body;
      if (!definition)
        continue; // a prototype of its own module's definition
      std::string text = normalized_text(i, st);
      auto [it, first] = defined_.try_emplace(st.name, Def{i, st.kind, st.link, text});
      if (first || it->second.module == i)
        continue;
      if (st.link == Stmt::weak && it->second.link == Stmt::weak && it->second.text == text) {
        drop_weak_repeat(i, k);
        continue;
      }
      return no("'" + st.name + "' is defined in modules " + std::to_string(it->second.module) +
                " and " + std::to_string(i));
    }
  }
  return true;
}

// A module's internal names that another module also uses are renamed in
// it, to names no module uses.
bool Merger::plan_renames() {
  std::map<std::string, size_t> users; ///< name -> how many modules use it
  for (const std::set<std::string>& own : names_)
    for (const std::string& name : own)
      ++users[name];
  for (size_t i = 0; i < n_; ++i)
    for (const Stmt& st : stmts_[i]) {
      if (st.kind == Stmt::header || st.link != Stmt::internal || renames_[i].count(st.name) ||
          users[st.name] < 2)
        continue;
      if (st.entry)
        return no("kernel '" + st.name + "' of module " + std::to_string(i) +
                  " shares its name with another module's");
      if (is_bare_instruction(st.name))
        return no("'" + st.name + "' of module " + std::to_string(i) +
                  " is spelled as an instruction and is not renamed");
      std::string fresh = st.name + "$m" + std::to_string(i);
      while (idents_.count(fresh))
        fresh += "_";
      idents_.insert(fresh);
      renames_[i][st.name] = fresh;
    }
  return true;
}

// Declarations of what another module defines, and repeated ones.
bool Merger::resolve_declarations() {
  std::map<std::string, std::string> declared; ///< external name -> its text
  std::set<std::string> prototyped;
  for (size_t i = 0; i < n_; ++i)
    for (size_t k = 0; k < stmts_[i].size(); ++k) {
      const Stmt& st = stmts_[i][k];
      if (st.kind == Stmt::header || st.link != Stmt::external)
        continue;
      if (auto d = defined_.find(st.name); d != defined_.end()) {
        if (st.kind != Stmt::func || d->second.kind != Stmt::func)
          return no("'" + st.name + "' is declared .extern in module " + std::to_string(i) +
                    " and defined as a variable in module " + std::to_string(d->second.module));
        if (d->second.module < i || !prototyped.insert(st.name).second)
          drop_[i][k] = true; // defined (or declared) above already
        else
          linkage_of_[i][k] = d->second.link == Stmt::weak ? ".weak" : ".visible";
        continue;
      }
      std::string text = normalized_text(i, st);
      auto [it, first] = declared.try_emplace(st.name, text);
      if (!first) {
        if (it->second != text)
          return no("'" + st.name + "' is declared differently in two modules");
        drop_[i][k] = true;
      }
    }
  return true;
}

// Statement k of module i, its linkage and names as the stages decided.
void Merger::write_statement(size_t i, size_t k, std::string& out) const {
  std::string_view text = *modules_[i];
  const Stmt& st = stmts_[i][k];
  size_t from = st.begin;
  if (auto l = linkage_of_[i].find(k); l != linkage_of_[i].end()) {
    out += text.substr(st.begin, st.extern_at - st.begin);
    out += l->second;
    from = st.extern_at + 7; // past ".extern"
  }
  std::string_view part = text.substr(from, st.end - from);
  if (renames_[i].empty()) {
    out += part;
  } else {
    size_t at = 0;
    for_each_ident(part, [&](size_t b, size_t e) {
      auto r = renames_[i].find(std::string(part.substr(b, e - b)));
      if (r == renames_[i].end())
        return;
      out += part.substr(at, b - at);
      out += r->second;
      at = e;
    });
    out += part.substr(at);
  }
  out += '\n';
}

std::string Merger::write() const {
  std::string out;
  out.reserve([&] {
    size_t total = 0;
    for (const std::string* m : modules_)
      total += m->size();
    return total;
  }());
  for (size_t i = 0; i < n_; ++i)
    for (size_t k = 0; k < stmts_[i].size(); ++k)
      if (!drop_[i][k])
        write_statement(i, k, out);
  return out;
}

} // namespace

std::optional<std::string> merge_ptx(const std::vector<const std::string*>& modules,
                                     std::string* why_out) {
  auto no = [&](const std::string& what) -> std::optional<std::string> {
    if (why_out)
      *why_out = what;
    return std::nullopt;
  };
  if (modules.empty())
    return no("no modules");
  Merger m(modules);
  if (!m.read() || !m.check_headers() || !m.find_definitions() || !m.plan_renames() ||
      !m.resolve_declarations())
    return no(m.why);
  return m.write();
}

} // namespace kiln::link
