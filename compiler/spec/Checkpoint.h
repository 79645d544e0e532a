//===- Checkpoint.h - Where parameters live in real checkpoints -*- C++ -*-===//
//
// archc names every parameter the Hugging Face Llama way
// ("model.layers.3.self_attn.q_proj.weight") and keeps it [out, in]. Other
// families store the same numbers under other names, sometimes fused (one
// query_key_value tensor for q, k and v; one gate_up_proj) or transposed
// (GPT-2's Conv1D keeps [in, out]). A naming scheme maps each of our
// parameters to the checkpoint tensor that holds it and the rows it takes
// from that tensor; the runtime assembles parameters from these rules.
//
//===----------------------------------------------------------------------===//
#ifndef ARCHC_SPEC_CHECKPOINT_H
#define ARCHC_SPEC_CHECKPOINT_H

#include "compiler/spec/ArchSpec.h"

namespace arch {

/// The spec spellings of spec::Naming, in enum order.
const std::vector<std::string> &namingNames();

/// Where one parameter's values are in a checkpoint. The parameter is the
/// checkpoint tensor (transposed first when `transpose`), or, when
/// `groups` > 0, its rows g * stride + offset ... + length for g < groups,
/// concatenated.
struct CheckpointSource {
  std::string tensor;
  std::vector<int64_t> shape; ///< the tensor as stored
  bool transpose = false;
  int64_t groups = 0, stride = 0, offset = 0, length = 0;
};

/// Why the spec's naming scheme cannot name every parameter of the spec
/// (e.g. GPT-2 checkpoints have no gate projection); empty if it can.
std::string namingProblem(const ArchSpec &spec);

/// The source of parameter `name` (of shape `shape`) under the spec's
/// scheme. Nothing for hf-llama, whose names are ours; an empty tensor name
/// for a parameter the scheme cannot name (namingProblem says why).
std::optional<CheckpointSource>
checkpointSource(const ArchSpec &spec, const std::string &name,
                 const std::vector<int64_t> &shape);

/// The base-model prefix ("transformer.", "gpt_neox.", "model.") that
/// Hugging Face leaves out of checkpoints saved from the bare model.
const char *namingBasePrefix(spec::Naming naming);

} // namespace arch

#endif // ARCHC_SPEC_CHECKPOINT_H
