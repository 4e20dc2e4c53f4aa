// Several jobs' PTX as one module, for one nvJitLink input.
//
// nvJitLink assembles each PTX input on its own, at a fixed cost of about
// 13 ms per input whatever its size (a one-kernel module takes 13 ms, two
// hundred one-kernel modules 3.3 s, the same two hundred kernels as one
// module 0.9 s). A closure's or library's PTX is therefore handed over as one
// module where that is provably the same program: the modules agree on
// their header, each module-scope name keeps its meaning, and nothing the
// merge cannot read is present. Otherwise the caller links the inputs one by
// one, as before.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kiln::link {

/// One PTX module equivalent to linking `modules` separately, or nullopt
/// with the reason in `*why` (when given) where they cannot be merged safely:
/// - every module has the same .version, .target and .address_size;
/// - a module's internal (non-.visible, non-.weak) function or variable
///   whose name another module also uses is renamed in that module (every
///   occurrence, as an identifier) to a name no module uses;
/// - a .weak definition repeated in later modules is kept once (the first),
///   and only when the repeats are the same text;
/// - an .extern function declared in one module and defined (.visible or
///   .weak) in another becomes a prototype before its definition, or is
///   dropped after it (ptxas refuses an .extern beside a definition, and a
///   declaration after one); an .extern declared identically twice is kept
///   once;
/// - debug sections (.file, .section), .common, .alias, an .extern variable
///   another module defines, two .visible definitions of one name, several
///   variables in one statement, two modules' kernels (.entry, found by name)
///   or internal names spelled as instructions that would need renaming, or
///   text the reader cannot split into statements: not merged.
/// A word followed by '.' is an instruction with its type ("max.s32"), never
/// a name: PTX names hold no '.'.
std::optional<std::string> merge_ptx(const std::vector<const std::string*>& modules,
                                     std::string* why = nullptr);

} // namespace kiln::link
