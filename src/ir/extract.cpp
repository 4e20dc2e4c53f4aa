#include "ir/extract.h"

#include "ir/unit.h"

#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DebugInfo.h>
#include <llvm/IR/DebugInfoMetadata.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ValueMapper.h>

#include <algorithm>
#include <set>
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
      for (const llvm::BasicBlock& bb : *f)
        for (const llvm::Instruction& inst : bb)
          KILN_TRY(visit_instruction(inst));
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

private:
  Status visit_instruction(const llvm::Instruction& inst) {
    auto* cb = dyn_cast<llvm::CallBase>(&inst);
    if (cb && is_marker_call(cb)) {
      if (cb->arg_size() != 1)
        return make_error(Code::invalid_argument,
                          "job '" + entry_ + "': kiln_deferred " + describe_site(inst) +
                              " must take exactly one argument");
      const llvm::Value* arg = cb->getArgOperand(0)->stripPointerCasts();
      auto* target = dyn_cast<llvm::Function>(arg);
      if (!target || target->isDeclaration() || target->getName() == kDeferredMarker)
        return make_error(Code::invalid_argument,
                          "job '" + entry_ + "': kiln_deferred " + describe_site(inst) +
                              " takes " + describe_value(arg) +
                              ", which is not a function defined in the unit");
      return Status::ok();
    }
    for (const llvm::Use& op : inst.operands()) {
      const llvm::Value* v = op.get();
      if (auto* f = dyn_cast<llvm::Function>(v); f && f->getName() == kDeferredMarker && !(cb && cb->isCallee(&op)))
        return make_error(Code::invalid_argument,
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

} // namespace

Result<ExtractedJob> extract_job(const llvm::Module& unit, const std::string& entry,
                                 const ExtractConfig& config) {
  const llvm::Function* root = unit.getFunction(entry);
  if (!root || root->isDeclaration() || entry == kDeferredMarker)
    return make_error(Code::invalid_argument,
                      "entry '" + entry + "' is not a function defined in the unit");

  Reach reach(entry);
  KILN_TRY(reach.visit(root));

  llvm::ValueToValueMapTy vmap;
  std::unique_ptr<llvm::Module> m = llvm::CloneModule(
      unit, vmap, [&](const llvm::GlobalValue* gv) { return reach.contains(gv); });

  // Lower kiln_deferred(@f) to the address of f's deferred symbol, a
  // declaration with f's type that f's own job defines.
  std::set<DeferredRef> refs;
  if (llvm::Function* marker = m->getFunction(kDeferredMarker)) {
    std::vector<llvm::CallBase*> calls;
    for (llvm::User* u : marker->users())
      if (auto* cb = dyn_cast<llvm::CallBase>(u))
        calls.push_back(cb);
    for (llvm::CallBase* cb : calls) {
      auto* target = llvm::cast<llvm::Function>(cb->getArgOperand(0)->stripPointerCasts());
      std::string child = target->getName().str();
      std::string symbol = config.deferred_symbol(child);
      llvm::FunctionCallee decl = m->getOrInsertFunction(symbol, target->getFunctionType());
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
  }

  // Keep only what the entry reaches, in the order it reaches it, so the
  // module does not depend on where things sat in the input files.
  std::vector<llvm::GlobalValue*> keep;
  for (const llvm::GlobalValue* gv : reach.order())
    if (auto it = vmap.find(gv); it != vmap.end())
      if (auto* ngv = llvm::dyn_cast_or_null<llvm::GlobalValue>(static_cast<llvm::Value*>(it->second)))
        keep.push_back(ngv);
  std::unordered_set<llvm::GlobalValue*> keep_set(keep.begin(), keep.end());
  for (const DeferredRef& r : refs)
    keep_set.insert(m->getFunction(r.symbol));
  std::vector<llvm::GlobalValue*> drop;
  for (llvm::GlobalValue& gv : m->global_values())
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
      m->getFunctionList().push_back(f);
    } else if (auto* v = dyn_cast<llvm::GlobalVariable>(gv)) {
      v->removeFromParent();
      m->insertGlobalVariable(v);
    }
  }
  for (const DeferredRef& r : refs) {
    llvm::Function* f = m->getFunction(r.symbol);
    f->removeFromParent();
    m->getFunctionList().push_back(f);
  }

  m->setSourceFileName("");
  m->setModuleIdentifier("kiln-job");
  if (llvm::NamedMDNode* ident = m->getNamedMetadata("llvm.ident"))
    m->eraseNamedMetadata(ident);
  if (llvm::NamedMDNode* cl = m->getNamedMetadata("llvm.commandline"))
    m->eraseNamedMetadata(cl);
  if (!config.debug) {
    llvm::StripDebugInfo(*m);
    // StripDebugInfo keeps the DWARF module flags; a unit built with -g must
    // give the same job as one built without when debug info is not kept.
    if (llvm::NamedMDNode* flags = m->getModuleFlagsMetadata()) {
      std::vector<llvm::MDNode*> keep;
      for (llvm::MDNode* flag : flags->operands()) {
        auto* name = flag->getNumOperands() > 1
                         ? llvm::dyn_cast<llvm::MDString>(flag->getOperand(1))
                         : nullptr;
        llvm::StringRef n = name ? name->getString() : "";
        if (n != "Dwarf Version" && n != "Debug Info Version" && n != "CodeView")
          keep.push_back(flag);
      }
      flags->clearOperands();
      for (llvm::MDNode* flag : keep)
        flags->addOperand(flag);
      if (flags->getNumOperands() == 0)
        m->eraseNamedMetadata(flags);
    }
  }
  strip_local_names(*m);
  // A target-specific intrinsic of another target (llvm.nvvm.* compiled for
  // AMD, say) would abort the backend; it is an input error instead.
  {
    llvm::Triple triple(config.triple);
    std::string own = triple.isNVPTX()     ? "llvm.nvvm."
                      : triple.isAMDGPU()  ? "llvm.amdgcn."
                      : triple.isX86()     ? "llvm.x86."
                      : triple.isAArch64() ? "llvm.aarch64."
                                           : "";
    for (const llvm::Function& f : *m) {
      if (!f.isIntrinsic())
        continue;
      llvm::StringRef name = f.getName();
      for (const char* foreign : {"llvm.nvvm.", "llvm.amdgcn.", "llvm.r600.", "llvm.x86.",
                                  "llvm.aarch64."})
        if (name.starts_with(foreign) && own != foreign)
          return make_error(Code::invalid_argument,
                            "job '" + entry + "' uses " + name.str() + ", which target " +
                                config.triple + " cannot compile");
    }
  }
  // The target decides the processor and features: the ones a front end
  // wrote for the arch it had in mind must not reach another target, nor
  // the key.
  for (llvm::Function& f : *m) {
    f.removeFnAttr("target-cpu");
    f.removeFnAttr("target-features");
    f.removeFnAttr("tune-cpu");
  }
  m->setTargetTriple(llvm::Triple(config.triple));
  m->setDataLayout(config.data_layout);

  ExtractedJob out;
  llvm::raw_string_ostream os(out.bitcode);
  llvm::WriteBitcodeToFile(*m, os);
  os.flush();
  out.refs.assign(refs.begin(), refs.end());
  std::set<std::string> deferred;
  for (const DeferredRef& r : refs)
    deferred.insert(r.symbol);
  for (const llvm::Function& f : *m)
    if (f.isDeclaration() && !f.isIntrinsic() && !deferred.count(f.getName().str()))
      out.callees.push_back(f.getName().str());
  std::sort(out.callees.begin(), out.callees.end());
  return out;
}

} // namespace kiln::ir
