// Job extraction: the globals an entry reaches, cloned into a canonical job
// module with its kiln_deferred calls lowered. Input errors carry the entry
// and, where the IR has a debug location, its file and line.
#include "ir/extract.h"

#include "ir/unit.h"

#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DebugInfo.h>
#include <llvm/IR/DebugInfoMetadata.h>
#include <llvm/IR/DebugProgramInstruction.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ValueMapper.h>

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace kiln::ir {

namespace {

using llvm::dyn_cast;
using llvm::isa;

bool is_marker_call(const llvm::CallBase* cb) {
  const llvm::Function* callee = cb->getCalledFunction();
  return callee && callee->getName() == kDeferredMarker;
}

std::string describe_site(const llvm::Instruction& inst) {
  std::string where = "in function '" + inst.getFunction()->getName().str() + "'";
  if (const llvm::DebugLoc& dl = inst.getDebugLoc())
    where += " at " + dl->getFilename().str() + ":" + std::to_string(dl.getLine());
  return where;
}

// An input error at `inst`, about job `entry`: its debug location, where it
// has one, is the error's position.
Error site_error(const llvm::Instruction& inst, const std::string& entry,
                 const std::string& message) {
  Error e = make_error(Code::invalid_argument, message).with_entry(entry);
  if (const llvm::DebugLoc& dl = inst.getDebugLoc())
    e = std::move(e).at(dl->getFilename().str(), dl.getLine(), dl.getCol());
  return e;
}

std::string describe_value(const llvm::Value* v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  v->printAsOperand(os, /*PrintType=*/true);
  return os.str();
}

// Depth-first walk from the entry over every global a definition uses,
// except the arguments of kiln_deferred calls: those are other jobs.
class Reach {
public:
  explicit Reach(const std::string& entry) : entry_(entry) {}

  Status visit(const llvm::GlobalValue* gv) {
    if (!seen_.insert(gv).second)
      return Status::ok();
    order_.push_back(gv);
    if (auto* f = dyn_cast<llvm::Function>(gv)) {
      if (f->getName() == kDeferredMarker)
        return Status::ok();
      values_ += f->arg_size();
      for (const llvm::BasicBlock& bb : *f) {
        values_ += 1 + bb.size();
        for (const llvm::Instruction& inst : bb)
          KILN_TRY(visit_instruction(inst));
      }
      if (f->hasPersonalityFn())
        KILN_TRY(visit_constant(f->getPersonalityFn()));
    } else if (auto* var = dyn_cast<llvm::GlobalVariable>(gv)) {
      if (var->hasInitializer())
        KILN_TRY(visit_constant(var->getInitializer()));
    } else if (auto* alias = dyn_cast<llvm::GlobalAlias>(gv)) {
      KILN_TRY(visit_constant(alias->getAliasee()));
    }
    return Status::ok();
  }

  const std::vector<const llvm::GlobalValue*>& order() const { return order_; }
  bool contains(const llvm::GlobalValue* gv) const { return seen_.count(gv) != 0; }
  /// Globals, blocks, instructions and arguments reached: what a clone maps.
  size_t values() const { return values_ + order_.size(); }

private:
  Status visit_instruction(const llvm::Instruction& inst) {
    auto* cb = dyn_cast<llvm::CallBase>(&inst);
    if (cb && is_marker_call(cb)) {
      if (cb->arg_size() != 1)
        return site_error(inst, entry_,
                          "job '" + entry_ + "': kiln_deferred " + describe_site(inst) +
                              " must take exactly one argument");
      const llvm::Value* arg = cb->getArgOperand(0)->stripPointerCasts();
      auto* target = dyn_cast<llvm::Function>(arg);
      if (!target || target->isDeclaration() || target->getName() == kDeferredMarker)
        return site_error(inst, entry_,
                          "job '" + entry_ + "': kiln_deferred " + describe_site(inst) +
                              " takes " + describe_value(arg) +
                              ", which is not a function defined in the unit");
      // The marker itself is reached: the job module declares it until its
      // calls are lowered (CloneModule declares every global; the reached
      // clone must too, or the call would keep naming the unit's marker and
      // the job would fall back to cloning the whole unit).
      return visit(cb->getCalledFunction());
    }
    for (const llvm::Use& op : inst.operands()) {
      const llvm::Value* v = op.get();
      if (auto* f = dyn_cast<llvm::Function>(v); f && f->getName() == kDeferredMarker && !(cb && cb->isCallee(&op)))
        return site_error(inst, entry_,
                          "job '" + entry_ + "': kiln_deferred " + describe_site(inst) +
                              " is used other than as a direct call");
      if (auto* c = dyn_cast<llvm::Constant>(v))
        KILN_TRY(visit_constant(c));
    }
    return Status::ok();
  }

  Status visit_constant(const llvm::Constant* c) {
    if (auto* gv = dyn_cast<llvm::GlobalValue>(c))
      return visit(gv);
    if (isa<llvm::ConstantData>(c))
      return Status::ok();
    if (!seen_constants_.insert(c).second)
      return Status::ok();
    for (const llvm::Use& op : c->operands())
      if (auto* oc = dyn_cast<llvm::Constant>(op.get()))
        KILN_TRY(visit_constant(oc));
    return Status::ok();
  }

  std::string entry_;
  std::unordered_set<const llvm::GlobalValue*> seen_;
  std::unordered_set<const llvm::Constant*> seen_constants_;
  std::vector<const llvm::GlobalValue*> order_;
  size_t values_ = 0;
};

// Local value names come from whoever printed the IR (or the parse order):
// they do not change the code, so they must not change the key.
void strip_local_names(llvm::Module& m) {
  for (llvm::Function& f : m) {
    for (llvm::Argument& a : f.args())
      a.setName("");
    for (llvm::BasicBlock& bb : f) {
      bb.setName("");
      for (llvm::Instruction& i : bb)
        if (!i.getType()->isVoidTy())
          i.setName("");
    }
  }
}

// Key Instructions (DILocation atom groups): cloning gives each
// instruction's atom group a fresh number from a counter of the whole
// LLVMContext, so a job's bytes would depend on how many functions the
// process cloned before it. Renumbering the groups in instruction order
// makes them a property of the job alone.
void canonicalize_atom_groups(llvm::Module& m) {
  std::unordered_map<uint64_t, uint64_t> number;
  for (llvm::Function& f : m)
    for (llvm::BasicBlock& bb : f)
      for (llvm::Instruction& i : bb) {
        const llvm::DILocation* dl = i.getDebugLoc().get();
        if (!dl || dl->getAtomGroup() == 0)
          continue;
        uint64_t group = number.try_emplace(dl->getAtomGroup(), number.size() + 1).first->second;
        if (group != dl->getAtomGroup())
          i.setDebugLoc(llvm::DILocation::get(dl->getContext(), dl->getLine(), dl->getColumn(),
                                              dl->getScope(), dl->getInlinedAt(),
                                              dl->isImplicitCode(), group, dl->getAtomRank()));
      }
}

constexpr llvm::RemapFlags kNullMissing = llvm::RF_NullMapMissingGlobalValues;

// A declaration in `m` of every reached global, mapped in `vmap`: variables
// and functions in reach order, then the aliases (returned) in unit order,
// as CloneModule keeps them.
std::vector<const llvm::GlobalAlias*> declare_reached(const llvm::Module& unit,
                                                      const Reach& reach, llvm::Module& m,
                                                      llvm::ValueToValueMapTy& vmap) {
  std::vector<const llvm::GlobalAlias*> aliases;
  for (const llvm::GlobalValue* gv : reach.order()) {
    if (auto* v = dyn_cast<llvm::GlobalVariable>(gv)) {
      auto* nv = new llvm::GlobalVariable(m, v->getValueType(), v->isConstant(), v->getLinkage(),
                                          nullptr, v->getName(), nullptr,
                                          v->getThreadLocalMode(), v->getType()->getAddressSpace());
      nv->copyAttributesFrom(v);
      vmap[v] = nv;
    } else if (auto* f = dyn_cast<llvm::Function>(gv)) {
      llvm::Function* nf =
          llvm::Function::Create(llvm::cast<llvm::FunctionType>(f->getValueType()), f->getLinkage(),
                                 f->getAddressSpace(), f->getName(), &m);
      nf->copyAttributesFrom(f);
      vmap[f] = nf;
    } else if (auto* a = dyn_cast<llvm::GlobalAlias>(gv)) {
      aliases.push_back(a);
    }
  }
  if (!aliases.empty()) {
    // CloneModule keeps the unit's alias order.
    std::unordered_set<const llvm::GlobalAlias*> reached(aliases.begin(), aliases.end());
    aliases.clear();
    for (const llvm::GlobalAlias& a : unit.aliases())
      if (reached.count(&a))
        aliases.push_back(&a);
    for (const llvm::GlobalAlias* a : aliases) {
      auto* ga = llvm::GlobalAlias::create(a->getValueType(), a->getType()->getPointerAddressSpace(),
                                           a->getLinkage(), a->getName(), &m);
      ga->copyAttributesFrom(a);
      vmap[a] = ga;
    }
  }
  return aliases;
}

void copy_comdat(llvm::Module& m, llvm::GlobalObject* dst, const llvm::GlobalObject* src) {
  if (const llvm::Comdat* c = src->getComdat()) {
    llvm::Comdat* nc = m.getOrInsertComdat(c->getName());
    nc->setSelectionKind(c->getSelectionKind());
    dst->setComdat(nc);
  }
}

// The reached variables' metadata, and the initializers and comdats of the
// ones defined.
void clone_variables(llvm::Module& m, const Reach& reach, llvm::ValueToValueMapTy& vmap) {
  llvm::SmallVector<std::pair<unsigned, llvm::MDNode*>, 4> mds;
  for (const llvm::GlobalValue* gv : reach.order()) {
    auto* v = dyn_cast<llvm::GlobalVariable>(gv);
    if (!v)
      continue;
    auto* nv = llvm::cast<llvm::GlobalVariable>(vmap[v]);
    mds.clear();
    v->getAllMetadata(mds);
    for (auto& [kind, node] : mds)
      nv->addMetadata(kind, *llvm::MapMetadata(node, vmap, kNullMissing));
    if (v->isDeclaration())
      continue;
    if (v->hasInitializer())
      nv->setInitializer(llvm::MapValue(v->getInitializer(), vmap));
    copy_comdat(m, nv, v);
  }
}

// The reached functions' bodies (with their metadata), or a declaration's
// metadata.
void clone_functions(llvm::Module& m, const Reach& reach, llvm::ValueToValueMapTy& vmap) {
  llvm::SmallVector<std::pair<unsigned, llvm::MDNode*>, 4> mds;
  for (const llvm::GlobalValue* gv : reach.order()) {
    auto* f = dyn_cast<llvm::Function>(gv);
    if (!f)
      continue;
    auto* nf = llvm::cast<llvm::Function>(vmap[f]);
    if (f->isDeclaration()) {
      mds.clear();
      f->getAllMetadata(mds);
      for (auto& [kind, node] : mds)
        nf->addMetadata(kind, *llvm::MapMetadata(node, vmap, kNullMissing));
      continue;
    }
    auto dest = nf->arg_begin();
    for (const llvm::Argument& a : f->args()) {
      dest->setName(a.getName());
      vmap[&a] = &*dest++;
    }
    llvm::SmallVector<llvm::ReturnInst*, 8> returns;
    llvm::CloneFunctionInto(nf, f, vmap, llvm::CloneFunctionChangeType::ClonedModule, returns);
    if (f->hasPersonalityFn())
      nf->setPersonalityFn(llvm::MapValue(f->getPersonalityFn(), vmap));
    copy_comdat(m, nf, f);
  }
}

// The job module's globals, as CloneModule with a "clone only what the
// entry reaches" filter would leave them after the unreached ones are
// erased, but without creating (and erasing) a declaration for every other
// global of the unit: extraction costs O(job), not O(unit), per job.
// Same declarations in the same order (reach order; aliases in unit order),
// same attributes, metadata, initializers, bodies and named metadata, so the
// bitcode, and the key, are the same. Metadata naming an unreached global
// maps to null, as it becomes when CloneModule's declaration is erased.
std::unique_ptr<llvm::Module> clone_reached(const llvm::Module& unit, const Reach& reach,
                                            llvm::ValueToValueMapTy& vmap) {
  auto m = std::make_unique<llvm::Module>(unit.getModuleIdentifier(), unit.getContext());
  m->setSourceFileName(unit.getSourceFileName());
  m->setDataLayout(unit.getDataLayout());
  m->setTargetTriple(unit.getTargetTriple());
  m->setModuleInlineAsm(unit.getModuleInlineAsm());

  const std::vector<const llvm::GlobalAlias*> aliases = declare_reached(unit, reach, *m, vmap);
  clone_variables(*m, reach, vmap);
  clone_functions(*m, reach, vmap);
  for (const llvm::GlobalAlias* a : aliases)
    if (const llvm::Constant* c = a->getAliasee())
      llvm::cast<llvm::GlobalAlias>(vmap[a])->setAliasee(llvm::MapValue(c, vmap));
  for (const llvm::NamedMDNode& nmd : unit.named_metadata()) {
    llvm::NamedMDNode* n = m->getOrInsertNamedMetadata(nmd.getName());
    for (const llvm::MDNode* op : nmd.operands())
      n->addOperand(llvm::MapMetadata(op, vmap, kNullMissing));
  }
  return m;
}

// True if anything in `m` still names a global of another module: metadata
// in a cloned body naming a global the entry does not reach (the cloner maps
// it to the unit's own). Then the module is built by CloneModule instead.
class ForeignRefs {
public:
  explicit ForeignRefs(const llvm::Module& m) : m_(m) {}

  bool any() {
    for (const llvm::NamedMDNode& nmd : m_.named_metadata())
      for (const llvm::MDNode* op : nmd.operands())
        if (metadata(op))
          return true;
    llvm::SmallVector<std::pair<unsigned, llvm::MDNode*>, 4> mds;
    for (const llvm::GlobalVariable& v : m_.globals()) {
      mds.clear();
      v.getAllMetadata(mds);
      for (auto& md : mds)
        if (metadata(md.second))
          return true;
      if (v.hasInitializer() && constant(v.getInitializer()))
        return true;
    }
    for (const llvm::Function& f : m_) {
      mds.clear();
      f.getAllMetadata(mds);
      for (auto& md : mds)
        if (metadata(md.second))
          return true;
      for (const llvm::BasicBlock& bb : f)
        for (const llvm::Instruction& inst : bb) {
          mds.clear();
          inst.getAllMetadata(mds);
          for (auto& md : mds)
            if (metadata(md.second))
              return true;
          for (const llvm::Use& op : inst.operands()) {
            if (auto* mav = dyn_cast<llvm::MetadataAsValue>(op.get())) {
              if (metadata(mav->getMetadata()))
                return true;
            } else if (auto* c = dyn_cast<llvm::Constant>(op.get()); c && constant(c)) {
              return true;
            }
          }
          for (const llvm::DbgRecord& r : inst.getDbgRecordRange()) {
            if (metadata(r.getDebugLoc().getAsMDNode()))
              return true;
            if (auto* dvr = dyn_cast<llvm::DbgVariableRecord>(&r)) {
              if (metadata(dvr->getRawLocation()) || metadata(dvr->getRawVariable()) ||
                  metadata(dvr->getRawExpression()) ||
                  (dvr->isDbgAssign() &&
                   (metadata(dvr->getRawAssignID()) || metadata(dvr->getRawAddress()) ||
                    metadata(dvr->getRawAddressExpression()))))
                return true;
            } else if (auto* dlr = dyn_cast<llvm::DbgLabelRecord>(&r)) {
              if (metadata(dlr->getRawLabel()))
                return true;
            }
          }
        }
    }
    return false;
  }

private:
  bool constant(const llvm::Constant* c) {
    if (auto* gv = dyn_cast<llvm::GlobalValue>(c))
      return gv->getParent() != &m_;
    if (isa<llvm::ConstantData>(c) || !constants_.insert(c).second)
      return false;
    for (const llvm::Use& op : c->operands())
      if (auto* oc = dyn_cast<llvm::Constant>(op.get()); oc && constant(oc))
        return true;
    return false;
  }

  bool metadata(const llvm::Metadata* md) {
    if (!md || !metadata_.insert(md).second)
      return false;
    if (auto* vam = dyn_cast<llvm::ValueAsMetadata>(md)) {
      auto* c = dyn_cast<llvm::Constant>(vam->getValue());
      return c && constant(c);
    }
    if (auto* args = dyn_cast<llvm::DIArgList>(md)) {
      for (const llvm::ValueAsMetadata* a : args->getArgs())
        if (metadata(a))
          return true;
      return false;
    }
    if (auto* node = dyn_cast<llvm::MDNode>(md))
      for (const llvm::MDOperand& op : node->operands())
        if (metadata(op.get()))
          return true;
    return false;
  }

  const llvm::Module& m_;
  std::unordered_set<const llvm::Metadata*> metadata_;
  std::unordered_set<const llvm::Constant*> constants_;
};

// While alive (and `on`), values created in `ctx` get no local names.
class DiscardLocalNames {
public:
  DiscardLocalNames(llvm::LLVMContext& ctx, bool on)
      : ctx_(ctx), was_(ctx.shouldDiscardValueNames()), on_(on) {
    if (on_)
      ctx_.setDiscardValueNames(true);
  }
  ~DiscardLocalNames() {
    if (on_)
      ctx_.setDiscardValueNames(was_);
  }
  DiscardLocalNames(const DiscardLocalNames&) = delete;
  DiscardLocalNames& operator=(const DiscardLocalNames&) = delete;

private:
  llvm::LLVMContext& ctx_;
  bool was_;
  bool on_;
};

// Lowers kiln_deferred(@f) to the address of f's deferred symbol, a
// declaration with f's type that f's own job defines; the deferred jobs
// named.
std::set<DeferredRef> lower_deferred_calls(llvm::Module& m, const ExtractConfig& config) {
  std::set<DeferredRef> refs;
  llvm::Function* marker = m.getFunction(kDeferredMarker);
  if (!marker)
    return refs;
  std::vector<llvm::CallBase*> calls;
  for (llvm::User* u : marker->users())
    if (auto* cb = dyn_cast<llvm::CallBase>(u))
      calls.push_back(cb);
  for (llvm::CallBase* cb : calls) {
    auto* target = llvm::cast<llvm::Function>(cb->getArgOperand(0)->stripPointerCasts());
    std::string child = target->getName().str();
    std::string symbol = config.deferred_symbol(child);
    llvm::FunctionCallee decl = m.getOrInsertFunction(symbol, target->getFunctionType());
    // Calls through the pointer must use the child's convention.
    if (auto* df = dyn_cast<llvm::Function>(decl.getCallee()))
      df->setCallingConv(target->getCallingConv());
    llvm::Value* replacement = decl.getCallee();
    if (replacement->getType() != cb->getType())
      replacement = llvm::ConstantExpr::getPointerCast(llvm::cast<llvm::Constant>(replacement),
                                                       cb->getType());
    cb->replaceAllUsesWith(replacement);
    cb->eraseFromParent();
    refs.insert({symbol, child});
  }
  marker->eraseFromParent();
  return refs;
}

// Keeps only what the entry reaches (and the deferred symbols), in the order
// it reaches it, so the module does not depend on where things sat in the
// input files.
void keep_reached(llvm::Module& m, const Reach& reach, llvm::ValueToValueMapTy& vmap,
                  bool whole_unit, const std::set<DeferredRef>& refs) {
  std::vector<llvm::GlobalValue*> keep;
  for (const llvm::GlobalValue* gv : reach.order())
    if (auto it = vmap.find(gv); it != vmap.end())
      if (auto* ngv = llvm::dyn_cast_or_null<llvm::GlobalValue>(static_cast<llvm::Value*>(it->second)))
        keep.push_back(ngv);
  // The map's value handles would otherwise be updated for every value
  // erased or destroyed from here on.
  if (!whole_unit)
    vmap.clear();
  std::unordered_set<llvm::GlobalValue*> keep_set(keep.begin(), keep.end());
  for (const DeferredRef& r : refs)
    keep_set.insert(m.getFunction(r.symbol));
  std::vector<llvm::GlobalValue*> drop;
  for (llvm::GlobalValue& gv : m.global_values())
    if (!keep_set.count(&gv))
      drop.push_back(&gv);
  // Whatever is dropped has no remaining users among kept definitions.
  for (llvm::GlobalValue* gv : drop)
    if (gv->use_empty())
      gv->eraseFromParent();
    else
      keep_set.insert(gv); // e.g. a declaration only metadata refers to; keep it

  for (llvm::GlobalValue* gv : keep) {
    if (auto* f = dyn_cast<llvm::Function>(gv)) {
      f->removeFromParent();
      m.getFunctionList().push_back(f);
    } else if (auto* v = dyn_cast<llvm::GlobalVariable>(gv)) {
      v->removeFromParent();
      m.insertGlobalVariable(v);
    }
  }
  for (const DeferredRef& r : refs) {
    llvm::Function* f = m.getFunction(r.symbol);
    f->removeFromParent();
    m.getFunctionList().push_back(f);
  }
}

// StripDebugInfo keeps the DWARF module flags; a unit built with -g must
// give the same job as one built without when debug info is not kept.
void drop_debug_module_flags(llvm::Module& m) {
  llvm::NamedMDNode* flags = m.getModuleFlagsMetadata();
  if (!flags)
    return;
  std::vector<llvm::MDNode*> keep;
  for (llvm::MDNode* flag : flags->operands()) {
    auto* name = flag->getNumOperands() > 1 ? llvm::dyn_cast<llvm::MDString>(flag->getOperand(1))
                                            : nullptr;
    llvm::StringRef n = name ? name->getString() : "";
    if (n != "Dwarf Version" && n != "Debug Info Version" && n != "CodeView")
      keep.push_back(flag);
  }
  flags->clearOperands();
  for (llvm::MDNode* flag : keep)
    flags->addOperand(flag);
  if (flags->getNumOperands() == 0)
    m.eraseNamedMetadata(flags);
}

// Whatever says where and how the unit was built, rather than what its code
// is: file and tool names, debug info unless kept, local names.
void strip_provenance(llvm::Module& m, bool debug) {
  m.setSourceFileName("");
  m.setModuleIdentifier("kiln-job");
  if (llvm::NamedMDNode* ident = m.getNamedMetadata("llvm.ident"))
    m.eraseNamedMetadata(ident);
  if (llvm::NamedMDNode* cl = m.getNamedMetadata("llvm.commandline"))
    m.eraseNamedMetadata(cl);
  if (!debug) {
    llvm::StripDebugInfo(m);
    drop_debug_module_flags(m);
  } else {
    canonicalize_atom_groups(m);
  }
  strip_local_names(m);
}

// A target-specific intrinsic of another target (llvm.nvvm.* compiled for
// AMD, say) would abort the backend; it is an input error instead.
Status check_intrinsics(const llvm::Module& m, const std::string& entry,
                        const ExtractConfig& config) {
  llvm::Triple triple(config.triple);
  std::string own = triple.isNVPTX()     ? "llvm.nvvm."
                    : triple.isAMDGPU()  ? "llvm.amdgcn."
                    : triple.isX86()     ? "llvm.x86."
                    : triple.isAArch64() ? "llvm.aarch64."
                                         : "";
  for (const llvm::Function& f : m) {
    if (!f.isIntrinsic())
      continue;
    llvm::StringRef name = f.getName();
    for (const char* foreign : {"llvm.nvvm.", "llvm.amdgcn.", "llvm.r600.", "llvm.x86.",
                                "llvm.aarch64."})
      if (name.starts_with(foreign) && own != foreign)
        return make_error(Code::invalid_argument,
                          "job '" + entry + "' uses " + name.str() + ", which target " +
                              config.triple + " cannot compile")
            .with_entry(entry);
  }
  return Status::ok();
}

// The target decides the processor and features: the ones a front end
// wrote for the arch it had in mind must not reach another target, nor the
// key. Returns the highest PTX ISA (+ptxN) the features asked for, else 0.
int drop_target_attributes(llvm::Module& m) {
  int ptx_isa = 0;
  for (llvm::Function& f : m) {
    if (f.hasFnAttribute("target-features")) {
      llvm::StringRef feats = f.getFnAttribute("target-features").getValueAsString();
      llvm::SmallVector<llvm::StringRef, 8> parts;
      feats.split(parts, ',', -1, false);
      for (llvm::StringRef p : parts) {
        unsigned n = 0;
        if (p.consume_front("+ptx") && !p.getAsInteger(10, n))
          ptx_isa = std::max(ptx_isa, int(n));
      }
    }
    f.removeFnAttr("target-cpu");
    f.removeFnAttr("target-features");
    f.removeFnAttr("tune-cpu");
  }
  return ptx_isa;
}

// The job as stored: its bitcode, the deferred jobs it names and the
// functions it calls but does not define.
ExtractedJob serialize_job(const llvm::Module& m, const std::set<DeferredRef>& refs, int ptx_isa,
                           bool whole_unit) {
  ExtractedJob out;
  llvm::raw_string_ostream os(out.bitcode);
  llvm::WriteBitcodeToFile(m, os);
  os.flush();
  out.refs.assign(refs.begin(), refs.end());
  out.ptx_isa = ptx_isa;
  out.by_unit_clone = whole_unit;
  std::set<std::string> deferred;
  for (const DeferredRef& r : refs)
    deferred.insert(r.symbol);
  for (const llvm::Function& f : m)
    if (f.isDeclaration() && !f.isIntrinsic() && !deferred.count(f.getName().str()))
      out.callees.push_back(f.getName().str());
  std::sort(out.callees.begin(), out.callees.end());
  return out;
}

// Builds, canonicalizes and serializes the job module. With `whole_unit`
// the module starts as CloneModule of the unit (every global declared, the
// unreached ones erased below); otherwise as clone_reached. Sets *retry when
// the fast module names another module's global (see ForeignRefs).
Result<ExtractedJob> build_job(const llvm::Module& unit, const std::string& entry,
                               const ExtractConfig& config, const Reach& reach, bool whole_unit,
                               bool* retry) {
  // Local names are stripped below anyway; on the fast path the clones never
  // get them, which saves a symbol-table insert and erase per value.
  DiscardLocalNames discard(unit.getContext(), !whole_unit);
  // Sized up front: growing moves every entry's value handle.
  llvm::ValueToValueMapTy vmap(whole_unit ? 64 : unsigned(reach.values() + 16));
  std::unique_ptr<llvm::Module> m =
      whole_unit ? llvm::CloneModule(unit, vmap,
                                     [&](const llvm::GlobalValue* gv) { return reach.contains(gv); })
                 : clone_reached(unit, reach, vmap);

  const std::set<DeferredRef> refs = lower_deferred_calls(*m, config);
  keep_reached(*m, reach, vmap, whole_unit, refs);
  strip_provenance(*m, config.debug);
  KILN_TRY(check_intrinsics(*m, entry, config));
  const int ptx_isa = drop_target_attributes(*m);
  m->setTargetTriple(llvm::Triple(config.triple));
  m->setDataLayout(config.data_layout);
  if (!whole_unit && ForeignRefs(*m).any()) {
    *retry = true;
    return make_error(Code::internal, "job '" + entry + "' names globals it does not reach")
        .with_entry(entry);
  }
  return serialize_job(*m, refs, ptx_isa, whole_unit);
}

Result<ExtractedJob> extract(const llvm::Module& unit, const std::string& entry,
                             const ExtractConfig& config, bool whole_unit) {
  const llvm::Function* root = unit.getFunction(entry);
  if (!root || root->isDeclaration() || entry == kDeferredMarker)
    return make_error(Code::invalid_argument,
                      "entry '" + entry + "' is not a function defined in the unit")
        .with_entry(entry);

  Reach reach(entry);
  KILN_TRY(reach.visit(root));
  // The fast path does not model ifuncs (CloneModule keeps every ifunc's
  // resolver declared).
  if (!whole_unit && unit.ifunc_empty()) {
    bool retry = false;
    auto job = build_job(unit, entry, config, reach, false, &retry);
    if (job || !retry)
      return job;
  }
  bool unused = false;
  return build_job(unit, entry, config, reach, true, &unused);
}

} // namespace

bool is_kernel(const llvm::Function& f) {
  return f.getCallingConv() == llvm::CallingConv::PTX_Kernel ||
         f.getCallingConv() == llvm::CallingConv::AMDGPU_KERNEL ||
         f.hasFnAttribute("kiln-kernel");
}

Result<ExtractedJob> extract_job(const llvm::Module& unit, const std::string& entry,
                                 const ExtractConfig& config) {
  return extract(unit, entry, config, false);
}

Result<ExtractedJob> extract_job_by_unit_clone(const llvm::Module& unit, const std::string& entry,
                                               const ExtractConfig& config) {
  return extract(unit, entry, config, true);
}

} // namespace kiln::ir
