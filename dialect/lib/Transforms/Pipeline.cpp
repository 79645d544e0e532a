//===- Pipeline.cpp - The pipeline archc compile runs ---------------------===//
#include "arch/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <algorithm>

using namespace mlir;

namespace arch {

namespace {
struct Step {
  const char *name;
  void (*add)(OpPassManager &, const PipelineTarget &);
};

/// A step whose pass takes no options from the target.
template <std::unique_ptr<Pass> (*make)()>
void plain(OpPassManager &pm, const PipelineTarget &) {
  pm.addPass(make());
}
} // namespace

/// The attention's form first (MLA absorbed), the rows only the last token
/// needs, fusion, then the kernels' weight layout; hoisting then moves all
/// the weight-only work they made to load time. Every pass works on the
/// whole module, so that --dump-ir and --mlir-print-ir-after-all show the
/// model after each one (nested function pipelines would interleave).
static const Step steps[] = {
    {"arch-absorb-mla", plain<createAbsorbMLAPass>},
    {"arch-sink-last-token", plain<createSinkLastTokenPass>},
    {"arch-fuse-qkv", plain<createFuseQKVPass>},
    {"arch-fuse-parallel-block", plain<createFuseParallelBlockPass>},
    {"arch-fuse-glu", plain<createFuseGluPass>},
    {"arch-fuse-residual", plain<createFuseResidualPass>},
    // (Its panel and arch-pack-weights' are their default, 64, both.)
    {"arch-fuse-rope", plain<createFuseRopePass>},
    {"arch-flash-tiling",
     [](OpPassManager &pm, const PipelineTarget &t) {
       FlashTilingPassOptions o;
       o.lanes = t.lanes;
       o.dot = t.attentionInput;
       pm.addPass(createFlashTilingPass(o));
     }},
    {"arch-pack-weights",
     [](OpPassManager &pm, const PipelineTarget &t) {
       PackWeightsPassOptions o;
       o.weightType = t.weightType;
       o.inputType = t.inputType;
       pm.addPass(createPackWeightsPass(o));
     }},
    {"arch-hoist-param-prep", plain<createHoistParamPrepPass>},
    {"canonicalize", plain<createCanonicalizerPass>},
};

/// The kernel-call level's passes that may be left out, between
/// arch-lower-to-kernels and archk-plan-buffers.
static const Step kernelSteps[] = {
    {"archk-bf16-inputs", plain<createBf16InputsPass>},
};

const std::vector<std::string> &defaultPipelinePasses() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Step &s : steps)
      n.push_back(s.name);
    for (const Step &s : kernelSteps)
      n.push_back(s.name);
    return n;
  }();
  return names;
}

static bool named(const std::vector<std::string> &names, const char *name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

LogicalResult buildDefaultPipeline(OpPassManager &pm,
                                   const std::vector<std::string> &disabled,
                                   std::string &error,
                                   const PipelineTarget &target) {
  const std::vector<std::string> &names = defaultPipelinePasses();
  for (const std::string &d : disabled)
    if (std::find(names.begin(), names.end(), d) == names.end()) {
      error = "--disable-pass: '" + d + "' is not a pass of the pipeline (";
      for (size_t i = 0; i < names.size(); ++i)
        error += (i ? ", " : "") + names[i];
      error += ")";
      return failure();
    }
  for (const Step &s : steps)
    if (!named(disabled, s.name))
      s.add(pm, target);
  return success();
}

void buildKernelLowering(OpPassManager &pm,
                         const std::vector<std::string> &disabled) {
  pm.addPass(createLowerToKernelsPass());
  for (const Step &s : kernelSteps)
    if (!named(disabled, s.name))
      s.add(pm, {});
  pm.addPass(createPlanBuffersPass());
}

void registerArchPassesAndPipelines() {
  registerArchPasses();
  PassPipelineRegistration<>(
      "arch-default-pipeline", "the passes archc compile runs, in order",
      [](OpPassManager &pm) {
        std::string error;
        (void)buildDefaultPipeline(pm, {}, error);
      });
}

} // namespace arch
