// First-minute diagnostics: what an input is when it is not IR, which
// defined function a missing entry probably meant, which target a unit was
// built for, and whether it may be compiled for another.
#include "ir/diagnose.h"

#include "ir/unit.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Demangle/Demangle.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Module.h>
#include <llvm/TargetParser/TargetParser.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace kiln::ir {

namespace {

// ---------------------------------------------------------------- inputs --

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// The extension of the file name, lower case, without the dot ("" if none).
std::string extension_of(const std::string& name) {
  size_t slash = name.find_last_of('/');
  size_t dot = name.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) ||
      dot == (slash == std::string::npos ? 0 : slash + 1))
    return "";
  return lower(std::string_view(name).substr(dot + 1));
}

/// The bitcode a recipe writes: the name with its extension replaced by .bc.
std::string bitcode_name(const std::string& name) {
  std::string ext = extension_of(name);
  return (ext.empty() ? name : name.substr(0, name.size() - ext.size() - 1)) + ".bc";
}

enum class Lang { cuda, hip, c, cxx };

const char* lang_name(Lang l) {
  switch (l) {
  case Lang::cuda: return "CUDA";
  case Lang::hip: return "HIP";
  case Lang::c: return "C";
  case Lang::cxx: return "C++";
  }
  return "";
}

/// Debian's HIP headers need the wavefront size macro clang 20 dropped: 64
/// on gfx9 and older, 32 (the default) on gfx10 and later.
unsigned default_wave_size(const std::string& gfx) {
  llvm::AMDGPU::GPUKind kind = llvm::AMDGPU::parseArchAMDGCN(gfx);
  if (kind == llvm::AMDGPU::GK_NONE)
    return 64;
  return (llvm::AMDGPU::getArchAttrAMDGCN(kind) & llvm::AMDGPU::FEATURE_WAVE32) ? 32 : 64;
}

/// The clang-22 command that makes LLVM IR of `file` (device side only for
/// CUDA and HIP). `explicit_lang` adds -x where the extension does not say.
std::string recipe(Lang lang, const std::string& file, const std::string& arch = "",
                   bool explicit_lang = true) {
  std::string out = bitcode_name(file);
  switch (lang) {
  case Lang::cuda:
    return "clang-22 -x cuda --cuda-device-only --cuda-gpu-arch=" +
           (arch.empty() ? std::string("sm_90") : arch) + " -nocudalib -O2 -emit-llvm -c " +
           file + " -o " + out;
  case Lang::hip: {
    std::string gfx = arch.empty() ? std::string("gfx942") : arch;
    return "clang-22 -x hip --cuda-device-only --offload-arch=" + gfx +
           " -nogpulib -D__AMDGCN_WAVEFRONT_SIZE=" +
           std::to_string(default_wave_size(gfx.substr(0, gfx.find(':')))) +
           " -O2 -emit-llvm -c " + file + " -o " + out;
  }
  case Lang::c:
    return std::string("clang-22 ") + (explicit_lang ? "-x c " : "") + "-O2 -emit-llvm -c " +
           file + " -o " + out;
  case Lang::cxx:
    return std::string("clang++-22 ") + (explicit_lang ? "-x c++ " : "") +
           "-O2 -emit-llvm -c " + file + " -o " + out;
  }
  return "";
}

/// The hint after a GPU recipe with a default architecture in it.
std::string arch_hint(Lang lang) {
  if (lang == Lang::cuda)
    return " (sm_90 is an example: use your GPU's sm_NN)";
  if (lang == Lang::hip)
    return " (gfx942 is an example: use your GPU's gfx, with -D__AMDGCN_WAVEFRONT_SIZE=32 on "
           "gfx10 and later; Debian's HIP headers need that macro)";
  return "";
}

Error not_ir(const std::string& name, const std::string& what, const std::string& todo) {
  return make_error(Code::invalid_argument,
                    name + " is " + what + ", not LLVM IR: Kiln takes LLVM IR (.ll/.bc); " + todo)
      .at(name, 0, 0);
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

/// The first word of `line`: letters, digits and underscores.
std::string_view first_word(std::string_view line) {
  size_t n = 0;
  while (n < line.size() &&
         (std::isalnum(static_cast<unsigned char>(line[n])) || line[n] == '_'))
    ++n;
  return line.substr(0, n);
}

/// The first line that is neither blank nor a C or C++ comment, without its
/// leading blanks; empty if there is none in the first 64 KiB.
std::string_view first_significant_line(std::string_view text) {
  text = text.substr(0, 64 * 1024);
  bool in_block = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    std::string_view line = text.substr(pos, end == std::string_view::npos ? end : end - pos);
    pos = end == std::string_view::npos ? text.size() : end + 1;
    for (;;) {
      size_t lead = line.find_first_not_of(" \t\r\f\v");
      line = lead == std::string_view::npos ? std::string_view() : line.substr(lead);
      if (in_block) {
        size_t close = line.find("*/");
        if (close == std::string_view::npos) {
          line = {};
          break;
        }
        in_block = false;
        line = line.substr(close + 2);
        continue;
      }
      if (starts_with(line, "/*")) {
        in_block = true;
        line = line.substr(2);
        continue;
      }
      break;
    }
    if (line.empty() || starts_with(line, "//"))
      continue;
    return line;
  }
  return {};
}

/// What a C-family text's markers say it is.
Lang lang_by_content(std::string_view text) {
  text = text.substr(0, 1024 * 1024);
  auto has = [&](std::string_view s) { return text.find(s) != std::string_view::npos; };
  if (has("hip/hip_runtime") || has("hipLaunchKernel") || has("hipMalloc") || has("__HIP"))
    return Lang::hip;
  if (has("__global__") || has("__device__") || has("cuda_runtime") || has("<cuda") ||
      has("<<<"))
    return Lang::cuda;
  if (has("namespace") || has("template") || has("std::") || has("class ") ||
      has("#include <iostream>") || has("::"))
    return Lang::cxx;
  return Lang::c;
}

/// The word after ".target " in PTX ("sm_80"), or "".
std::string ptx_target(std::string_view text) {
  size_t at = text.substr(0, 64 * 1024).find(".target");
  if (at == std::string_view::npos)
    return "";
  std::string_view rest = text.substr(at + 7);
  size_t start = rest.find_first_not_of(" \t");
  if (start == std::string_view::npos)
    return "";
  std::string word(first_word(rest.substr(start)));
  return starts_with(word, "sm_") ? word : "";
}

/// The first "gfxNNN" in `bytes` (an offload bundle's entry ids), or "".
std::string first_gfx(std::string_view bytes) {
  bytes = bytes.substr(0, 64 * 1024);
  for (size_t at = bytes.find("gfx"); at != std::string_view::npos;
       at = bytes.find("gfx", at + 3)) {
    std::string word(first_word(bytes.substr(at)));
    if (word.size() > 3 && std::isdigit(static_cast<unsigned char>(word[3])))
      return word;
  }
  return "";
}

// The first words that begin C, C++, CUDA and HIP sources and never IR.
const std::set<std::string_view> kSourceWords = {
    "__global__", "__device__", "__host__", "__constant__", "__shared__", "__launch_bounds__",
    "extern",     "template",   "namespace", "struct",      "class",      "typedef",
    "using",      "static",     "int",       "void",        "float",      "double",
    "const",      "constexpr",  "inline",    "auto",        "unsigned",   "signed",
    "char",       "long",       "short",     "bool",        "enum",       "union",
    "volatile",   "size_t"};

// The first tokens of textual IR: anything else is not IR.
const std::set<std::string_view> kIrWords = {"define",     "declare",      "target",
                                             "source_filename", "attributes", "module",
                                             "uselistorder", "uselistorder_bb"};

} // namespace

Status check_input_kind(const std::string& name, std::string_view bytes) {
  // Binary forms first, by their magic numbers.
  if (starts_with(bytes, "BC\xC0\xDE") || starts_with(bytes, "\xDE\xC0\x17\x0B"))
    return Status::ok(); // bitcode, or bitcode in its wrapper
  if (starts_with(bytes, "\x7f"
                         "ELF")) {
    unsigned machine = 0;
    if (bytes.size() >= 20) {
      auto b0 = static_cast<unsigned char>(bytes[18]), b1 = static_cast<unsigned char>(bytes[19]);
      machine = bytes[5] == 2 ? (b0 << 8 | b1) : (b1 << 8 | b0); // EI_DATA 2: big-endian
    }
    if (machine == 190) // EM_CUDA
      return not_ir(name, "an NVIDIA cubin (ELF)",
                    "Kiln makes PTX and cubins itself: give it the IR the cubin was built from, "
                    "e.g. " + recipe(Lang::cuda, "SOURCE.cu") + arch_hint(Lang::cuda));
    if (machine == 224) // EM_AMDGPU
      return not_ir(name, "an AMD GPU code object (ELF)",
                    "Kiln makes code objects itself: give it the IR the code object was built "
                    "from, e.g. " + recipe(Lang::hip, "SOURCE.hip") + arch_hint(Lang::hip));
    return not_ir(name, "a compiled object or library (ELF)",
                  "give it the IR of the source instead, e.g. " +
                      recipe(Lang::c, "SOURCE.c", "", false) + " (clang++-22 for C++)");
  }
  if (starts_with(bytes, "\x50\xED\x55\xBA"))
    return not_ir(name, "an NVIDIA fatbin",
                  "Kiln makes cubins itself: give it the device IR, e.g. " +
                      recipe(Lang::cuda, "SOURCE.cu") + arch_hint(Lang::cuda));
  if (starts_with(bytes, "__CLANG_OFFLOAD_BUNDLE__") || starts_with(bytes, "\x10\xFF\x10\xAD")) {
    bool amd = bytes.substr(0, 64 * 1024).find("amdgcn") != std::string_view::npos;
    Lang lang = amd ? Lang::hip : Lang::cuda;
    std::string arch = amd ? first_gfx(bytes) : "";
    return not_ir(name, "a clang offload bundle (host and device code together)",
                  "compile with --cuda-device-only for the device IR alone: " +
                      recipe(lang, "SOURCE." + std::string(amd ? "hip" : "cu"), arch) +
                      (arch.empty() ? arch_hint(lang) : ""));
  }
  if (starts_with(bytes, "!<arch>\n"))
    return not_ir(name, "an archive (ar)", "give it the .ll or .bc files themselves");
  if (bytes.substr(0, 4096).find('\0') != std::string_view::npos)
    return Status::ok(); // some other binary: the parser says what is wrong with it

  std::string ext = extension_of(name);
  static const std::map<std::string, Lang> kSourceExt = {
      {"cu", Lang::cuda}, {"hip", Lang::hip}, {"c", Lang::c},     {"cc", Lang::cxx},
      {"cpp", Lang::cxx}, {"cxx", Lang::cxx}, {"c++", Lang::cxx}};
  static const std::set<std::string> kHeaderExt = {"cuh", "h", "hh", "hpp", "hxx"};

  std::string_view line = first_significant_line(bytes);
  if (starts_with(line, ".version") || starts_with(line, ".target") ||
      starts_with(line, ".address_size")) {
    std::string arch = ptx_target(bytes);
    return not_ir(name, "PTX assembly",
                  "Kiln makes PTX itself: give it the IR the PTX was made from, e.g. " +
                      recipe(Lang::cuda, "SOURCE.cu", arch) +
                      (arch.empty() ? arch_hint(Lang::cuda) : ""));
  }
  bool looks_ir = !line.empty() && (line[0] == ';' || line[0] == '@' || line[0] == '%' ||
                                    line[0] == '!' || line[0] == '$' || line[0] == '^' ||
                                    kIrWords.count(first_word(line)));
  if (looks_ir)
    return Status::ok();
  bool looks_source = !line.empty() && (line[0] == '#' || kSourceWords.count(first_word(line)));
  bool source_ext = kSourceExt.count(ext) || kHeaderExt.count(ext);
  if (!looks_source && !source_ext)
    return Status::ok(); // neither: the parser says what is wrong with it

  if (kHeaderExt.count(ext)) {
    Lang lang = ext == "cuh" ? Lang::cuda : lang_by_content(bytes);
    if (ext != "h" && lang == Lang::c)
      lang = Lang::cxx;
    const char* src = lang == Lang::cuda  ? "SOURCE.cu"
                      : lang == Lang::hip ? "SOURCE.hip"
                      : lang == Lang::cxx ? "SOURCE.cpp"
                                          : "SOURCE.c";
    return not_ir(name, std::string("a ") + lang_name(lang) + " header",
                  "compile the source file that includes it, e.g. " +
                      recipe(lang, src, "", false) + arch_hint(lang));
  }
  auto known = kSourceExt.find(ext);
  Lang lang = known != kSourceExt.end() ? known->second : lang_by_content(bytes);
  // A .cpp file with kernels in it is CUDA or HIP all the same.
  if (lang == Lang::cxx || lang == Lang::c) {
    Lang content = lang_by_content(bytes);
    if (content == Lang::cuda || content == Lang::hip)
      lang = content;
  }
  return not_ir(name, std::string(lang_name(lang)) + " source",
                "compile it with " + recipe(lang, name, "", known == kSourceExt.end() ||
                                                               lang != known->second) +
                    arch_hint(lang));
}

// --------------------------------------------------------------- entries --

namespace {

/// A defined function's names: as in the IR, demangled in full, and its
/// demangled qualified and base names (all the IR name if not mangled).
struct Names {
  std::string mangled, full, qualified, base;
};

Names names_of(const std::string& mangled) {
  Names n{mangled, llvm::demangle(mangled), mangled, mangled};
  llvm::ItaniumPartialDemangler d;
  if (!d.partialDemangle(mangled.c_str()) && d.isFunction()) {
    size_t size = 0;
    if (char* q = d.getFunctionName(nullptr, &size)) {
      n.qualified = q;
      std::free(q);
    }
    size = 0;
    if (char* b = d.getFunctionBaseName(nullptr, &size)) {
      n.base = b;
      std::free(b);
    }
  }
  return n;
}

bool candidate(const llvm::Function& f) {
  return !f.isDeclaration() && !f.isIntrinsic() && f.getName() != kDeferredMarker;
}

} // namespace

std::vector<std::string> entry_suggestions(const llvm::Module& unit, const std::string& wanted) {
  // (rank, distance, name): 0 same name, 1 same ignoring case, 2 close.
  std::vector<std::tuple<int, unsigned, std::string>> found;
  llvm::StringRef w(wanted);
  for (const llvm::Function& f : unit.functions()) {
    if (!candidate(f) || f.getName() == wanted)
      continue;
    Names n = names_of(f.getName().str());
    const std::string* forms[] = {&n.base, &n.qualified, &n.mangled, &n.full};
    int rank = 3;
    unsigned dist = ~0u;
    for (const std::string* s : forms) {
      if (*s == wanted) {
        rank = 0;
        dist = 0;
        break;
      }
      if (w.equals_insensitive(*s) && rank > 1) {
        rank = 1;
        dist = 0;
      }
      // Close, but not a different name of the same length ("f" vs "g").
      unsigned d = w.edit_distance(*s, true, 2);
      if (d <= 2 && d < wanted.size() && rank >= 2 && (rank > 2 || d < dist)) {
        rank = 2;
        dist = d;
      }
    }
    if (rank < 3)
      found.emplace_back(rank, dist, n.mangled);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (const auto& [rank, dist, name] : found)
    if (out.size() < 5)
      out.push_back(name);
  return out;
}

std::string describe_missing_entry(const llvm::Module& unit, const std::string& wanted) {
  std::string msg = "entry '" + wanted + "' is not a function defined in the unit";
  if (const llvm::Function* f = unit.getFunction(wanted); f && f->isDeclaration())
    msg += " (it is only declared: add the input that defines it)";
  else if (unit.getNamedGlobal(wanted))
    msg += " (it is a global variable)";
  auto shown = [](const std::string& mangled) {
    std::string full = llvm::demangle(mangled);
    return full == mangled ? mangled : mangled + " (" + full + ")";
  };
  std::vector<std::string> close = entry_suggestions(unit, wanted);
  if (!close.empty()) {
    msg += close.size() == 1 ? "; did you mean " : "; did you mean one of ";
    for (size_t i = 0; i < close.size(); ++i)
      msg += (i ? ", " : "") + shown(close[i]);
    return msg + "?";
  }
  std::vector<std::string> defined = exported_functions(unit);
  if (defined.empty())
    return msg + "; it defines no externally visible function";
  msg += "; it defines ";
  for (size_t i = 0; i < defined.size() && i < 5; ++i)
    msg += (i ? ", " : "") + shown(defined[i]);
  if (defined.size() > 5)
    msg += " and " + std::to_string(defined.size() - 5) + " more";
  return msg;
}

// --------------------------------------------------------------- targets --

namespace {

/// "the unit's IR" or "SOURCE's IR", for messages.
std::string ir_of(const std::string& source) {
  return source.empty() ? "the unit's IR" : source + "'s IR";
}

/// Which kind of Kiln target a triple's code is; nullopt for GPUs and
/// virtual ISAs Kiln does not compile (r600, SPIR-V, wasm, ...).
std::optional<core::TargetKind> kind_of(const llvm::Triple& t) {
  if (t.isNVPTX())
    return core::TargetKind::nvptx;
  if (t.isAMDGCN())
    return core::TargetKind::amdgpu;
  if (t.isAMDGPU() || t.isSPIROrSPIRV() || t.isWasm() || t.getArch() == llvm::Triple::bpfel ||
      t.getArch() == llvm::Triple::bpfeb)
    return std::nullopt;
  return core::TargetKind::host;
}

std::string describe_kind(const llvm::Triple& t) {
  auto kind = kind_of(t);
  if (!kind)
    return "code Kiln does not compile";
  switch (*kind) {
  case core::TargetKind::nvptx:
    return t.getArch() == llvm::Triple::nvptx ? "32-bit NVIDIA GPU code" : "NVIDIA GPU code";
  case core::TargetKind::amdgpu:
    return "AMD GPU code";
  case core::TargetKind::host:
    return "host code";
  }
  return "";
}

std::string describe_target(const core::TargetDesc& t) {
  switch (t.kind) {
  case core::TargetKind::nvptx:
    return "NVIDIA " + t.spec;
  case core::TargetKind::amdgpu:
    return "AMD " + t.spec;
  case core::TargetKind::host:
    return t.spec == "host" ? "the host (" + t.triple + ")"
                            : "the host target " + t.spec + " (" + t.triple + ")";
  }
  return t.spec;
}

/// The defined functions' "target-cpu" values, each with the first
/// function that names it.
std::map<std::string, std::string> cpus_of(const llvm::Module& unit) {
  std::map<std::string, std::string> cpus;
  for (const llvm::Function& f : unit.functions())
    if (candidate(f) && f.hasFnAttribute("target-cpu"))
      cpus.emplace(f.getFnAttribute("target-cpu").getValueAsString().str(), f.getName().str());
  return cpus;
}

/// Per AMD feature Kiln's specs carry (sramecc, xnack) and the wavefront
/// size features: the sign each defined function gives it, with the first
/// function that gives each sign.
std::map<std::string, std::map<char, std::string>> amd_features_of(const llvm::Module& unit) {
  std::map<std::string, std::map<char, std::string>> out;
  for (const llvm::Function& f : unit.functions()) {
    if (!candidate(f) || !f.hasFnAttribute("target-features"))
      continue;
    llvm::StringRef all = f.getFnAttribute("target-features").getValueAsString();
    llvm::SmallVector<llvm::StringRef, 32> feats;
    all.split(feats, ',', -1, false);
    for (llvm::StringRef feat : feats) {
      if (feat.size() < 2 || (feat[0] != '+' && feat[0] != '-'))
        continue;
      std::string name = feat.drop_front().str();
      if (name == "sramecc" || name == "xnack" || name == "wavefrontsize32" ||
          name == "wavefrontsize64")
        out[name].emplace(feat[0], f.getName().str());
    }
  }
  return out;
}

/// The recipe that builds IR for `target`, for messages.
std::string recipe_for(const core::TargetDesc& target, const std::string& source) {
  // The source the IR came from is named like the IR, when there is one input.
  std::string stem = "SOURCE";
  if (!source.empty() && source.find(", ") == std::string::npos) {
    stem = bitcode_name(source);
    stem.resize(stem.size() - 3);
  }
  switch (target.kind) {
  case core::TargetKind::nvptx:
    return "compile the device side with " + recipe(Lang::cuda, stem + ".cu", target.spec);
  case core::TargetKind::amdgpu:
    return "compile the device side with " + recipe(Lang::hip, stem + ".hip", target.cpu);
  case core::TargetKind::host:
    return "compile the host side for this machine with " +
           recipe(Lang::cxx, stem + ".cpp", "", false);
  }
  return "";
}

} // namespace

Result<std::string> target_of_unit(const llvm::Module& unit, const std::string& source) {
  const llvm::Triple& triple = unit.getTargetTriple();
  if (triple.getArch() == llvm::Triple::UnknownArch)
    return std::string(); // target-neutral
  auto kind = kind_of(triple);
  if (!kind || *kind == core::TargetKind::host)
    return std::string(); // the host; check_unit_for_target refuses what it cannot be
  auto cpus = cpus_of(unit);
  const char* flag = *kind == core::TargetKind::nvptx ? "sm_NN" : "gfxNNN";
  if (cpus.empty())
    return make_error(Code::invalid_argument,
                      ir_of(source) + " is for " + triple.str() + " (" + describe_kind(triple) +
                          ") but its functions name no GPU (no \"target-cpu\" attribute): give "
                          "the target with --target " + flag)
        .at(source);
  if (cpus.size() > 1) {
    auto a = cpus.begin(), b = std::next(a);
    return make_error(Code::invalid_argument,
                      ir_of(source) + " was built for more than one GPU: function " + a->second +
                          " says target-cpu=" + a->first + ", function " + b->second +
                          " says target-cpu=" + b->first + ": build it for one GPU, or give "
                          "the target with --target " + flag)
        .at(source);
  }
  std::string spec = cpus.begin()->first;
  if (*kind == core::TargetKind::nvptx)
    return spec;
  // AMD: the spec carries sramecc and xnack where the IR fixes them, in
  // Kiln's canonical order (by name).
  for (const auto& [name, signs] : amd_features_of(unit)) {
    if (name != "sramecc" && name != "xnack")
      continue;
    if (signs.size() > 1)
      return make_error(Code::invalid_argument,
                        ir_of(source) + " disagrees on " + name + ": function " +
                            signs.at('+') + " has +" + name + ", function " + signs.at('-') +
                            " has -" + name + ": build it with one setting")
          .at(source);
    spec += ":" + name + signs.begin()->first;
  }
  return spec;
}

Result<std::vector<std::string>> check_unit_for_target(const llvm::Module& unit,
                                                       const core::TargetDesc& target,
                                                       const std::string& source) {
  std::vector<std::string> warnings;
  const llvm::Triple& triple = unit.getTargetTriple();
  if (triple.getArch() == llvm::Triple::UnknownArch)
    return warnings; // target-neutral: Kiln gives it the target's triple and layout
  llvm::Triple want(target.triple);
  auto kind = kind_of(triple);
  auto refuse = [&](const std::string& why) {
    return make_error(Code::invalid_argument, why).with_target(target.spec).at(source);
  };
  if (!kind)
    return refuse(ir_of(source) + " is for " + triple.str() + " (" + describe_kind(triple) +
                  "), not " + describe_target(target) + ": " + recipe_for(target, source));
  if (*kind != target.kind) {
    std::string todo = recipe_for(target, source);
    // GPU IR for the wrong target: its own target is the likelier intent.
    if (*kind != core::TargetKind::host) {
      auto own = target_of_unit(unit, source);
      if (own && !own->empty())
        todo = "precompile it with --target " + *own + ", or " + todo;
    }
    return refuse(ir_of(source) + " is for " + triple.str() + " (" + describe_kind(triple) +
                  "), not " + describe_target(target) + ": " + todo);
  }
  if (triple.getArch() != want.getArch() ||
      (triple.getOS() != llvm::Triple::UnknownOS && want.getOS() != llvm::Triple::UnknownOS &&
       triple.getOS() != want.getOS()))
    return refuse(ir_of(source) + " is for " + triple.str() + " (" + describe_kind(triple) +
                  "), not " + describe_target(target) + ", whose triple is " + target.triple +
                  ": " + recipe_for(target, source));
  if (target.kind == core::TargetKind::host)
    return warnings;

  // The same kind of GPU: code specialised for another one is a warning.
  const char* arch_flag =
      target.kind == core::TargetKind::nvptx ? "--cuda-gpu-arch=" : "--offload-arch=";
  for (const auto& [cpu, function] : cpus_of(unit)) {
    // sm_90 code is valid on sm_90a and sm_90f, which extend it.
    if (cpu == target.cpu || target.cpu == cpu + "a" || target.cpu == cpu + "f")
      continue;
    warnings.push_back(ir_of(source) + " was built for " + cpu + " (its functions say target-cpu=" + cpu +
                       ", e.g. " + function + "); precompiling it for " + target.spec +
                       " may miscompile or fail: build the IR for " + target.spec + " (" +
                       arch_flag + target.spec + ")");
  }
  if (target.kind != core::TargetKind::amdgpu)
    return warnings;
  auto feats = amd_features_of(unit);
  llvm::StringRef wanted_features(target.features);
  for (const char* name : {"sramecc", "xnack"}) {
    auto it = feats.find(name);
    if (it == feats.end())
      continue;
    for (char sign : {'+', '-'}) {
      char other = sign == '+' ? '-' : '+';
      if (it->second.count(sign) &&
          wanted_features.contains(std::string(1, other) + name))
        warnings.push_back(ir_of(source) + " was built with " + std::string(1, sign) + name +
                           " (e.g. function " + it->second.at(sign) + "); precompiling it for " +
                           target.spec + " (" + other + name +
                           ") may miscompile or fail: build the IR for " + target.spec + " (" +
                           arch_flag + target.spec + ")");
    }
  }
  unsigned wave = default_wave_size(target.cpu);
  for (unsigned size : {32u, 64u}) {
    auto it = feats.find("wavefrontsize" + std::to_string(size));
    if (size == wave || it == feats.end() || !it->second.count('+'))
      continue;
    warnings.push_back(ir_of(source) + " was built for wave" + std::to_string(size) +
                       " (its functions say +wavefrontsize" + std::to_string(size) + ", e.g. " +
                       it->second.at('+') + "), but " + target.spec + " code is wave" +
                       std::to_string(wave) + ": its wave-size assumptions (ballots, lane " +
                       "masks, __AMDGCN_WAVEFRONT_SIZE) may miscompile: build the IR for " +
                       target.spec + " (" + arch_flag + target.spec +
                       (size == 64 ? ", without -mwavefrontsize64)" : ")"));
  }
  return warnings;
}

} // namespace kiln::ir
