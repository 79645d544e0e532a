//===- archc.cpp - The archc driver ---------------------------------------===//
//
//   archc compile SPEC|IR [-o OUT]
//                 [--emit=import|mlir|kernels|halide|c|obj|lib]
//                 [--target=T] [--disable-pass=NAME] [--pass-pipeline=P]
//                 [--dump-ir=DIR] [--weight-type=T] [--matmul-input=T]
//                 [--attention-input=T] [--kv-type=T] [--max-chunk=N]
//                 [--no-cache] [--build-stats] [--sanitize] [--quiet]
//   archc check   SPEC|IR [--json] [--context=N] [--weight-type=T]
//                 [--limits]
//   archc run     SPEC|IR|LIB --weights FILE [--tokenizer FILE] --prompt TEXT -n N
//   archc bench   SPEC|IR|LIB [--random-weights|--weights FILE] --prompt-len N
//                 --gen M --threads K [--runs R] [--json] [--profile]
//   archc import-hf CONFIG.json|DIR|FILE.gguf [-o SPEC.toml] [--name NAME]
//
// SPEC is a .toml spec, a Hugging Face model directory (its config.json,
// imported as import-hf would write it) or a GGUF file (its metadata as
// the config.json it came from; run takes the file as its weights and
// tokenizer too), IR an .mlir module
// of the arch dialect (as --emit=mlir or --dump-ir writes it). Like Toy's
// toyc, --emit decides how far to lower. Each subcommand parses its own
// options, so `archc SUB --help` lists only what SUB takes.
//
//===----------------------------------------------------------------------===//
#include "Chat.h"
#include "Grammar.h"
#include "ServeProtocol.h"
#include "ToolCalls.h"
#include "Serve.h"
#include "compiler/chat/ChatTemplate.h"
#include "ModelLib.h"
#include "Tool.h"
#include "arch/Analysis/ModelFigures.h"
#include "arch/Dialect/ArchDialect.h"
#include "arch/Transforms/Passes.h"
#include "compiler/import/GGUFConfig.h"
#include "compiler/import/HFConfig.h"
#include "compiler/import/ImportSpec.h"
#include "compiler/spec/ArchSpec.h"
#include "compiler/spec/Checkpoint.h"
#include "lowering/GlueEmitter.h"
#include "lowering/HalideEmitter.h"
#include "lowering/LibraryBuilder.h"
#include "lowering/OutputFile.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <sys/resource.h>
#include <unistd.h>

using namespace arch;
namespace cl = llvm::cl;

namespace fs = std::filesystem;

namespace {

cl::OptionCategory archcCat("archc options");

using Clock = std::chrono::steady_clock;

/// Halide's pool takes at most this many threads (and so does --threads).
constexpr int kMaxThreads = 256;

std::string withCommas(int64_t v) {
  std::string s = std::to_string(v);
  for (int i = int(s.size()) - 3; i > (v < 0 ? 1 : 0); i -= 3)
    s.insert(size_t(i), ",");
  return s;
}

/// Writes `text` to `path` ("-" = stdout) whole or not at all (putFile).
bool writeOutput(const std::string &path, const std::string &text,
                 std::string &error) {
  if (path == "-") {
    llvm::outs() << text;
    return true;
  }
  return putFile(path, &text, "", 0666, error);
}

/// Whether output `out` can be written, and is not input `input` (which
/// it would replace), checked before the work that ends in writing it.
bool checkOutput(const std::string &input, const std::string &out,
                 std::string &error) {
  if (out == "-")
    return true;
  std::error_code ec;
  if (fs::equivalent(input, out, ec)) {
    error = "the output " + out + " is the input " + input;
    return false;
  }
  return checkOutputPath(out, error);
}

/// Whether `path` is a Hugging Face configuration, not a spec: a model
/// directory (its config.json), a .json file, or a GGUF file (its
/// metadata, as the config.json it came from); `config` gets the file.
bool isHFConfig(const std::string &path, std::string &config) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    config = (fs::path(path) / "config.json").string();
    return true;
  }
  config = path;
  return (path.size() >= 5 &&
          path.compare(path.size() - 5, 5, ".json") == 0) ||
         isGGUFFile(path);
}

/// The spec text of Hugging Face config `config` (named for its
/// directory, or a GGUF file's stem, unless `name` is given), with a
/// warning for the fields it does not read.
bool hfSpecText(const std::string &config, std::string name,
                std::string &text) {
  std::string json, why;
  std::vector<std::string> unreadKeys;
  bool gguf = isGGUFFile(config);
  if (gguf ? !ggufConfigJSON(config, json, unreadKeys, why)
           : !readSpecText(config, json, why)) {
    fail(gguf ? why : config + ": " + why);
    return false;
  }
  if (!unreadKeys.empty()) {
    llvm::errs() << "archc: warning: " << config << ": metadata keys archc "
                 << "does not read (" << unreadKeys.size() << "):";
    for (const std::string &k : unreadKeys)
      llvm::errs() << " " << k;
    llvm::errs() << "\n";
  }
  if (name.empty() && gguf)
    name = fs::path(config).stem().string();
  if (name.empty())
    name = fs::absolute(fs::path(config)).parent_path().filename().string();
  HFSpec hf;
  if (!importHFConfig(json, config, name, hf, why)) {
    fail(why);
    return false;
  }
  if (!hf.unknown.empty()) {
    llvm::errs() << "archc: warning: " << config << ": fields archc does "
                 << "not read (" << hf.unknown.size() << "):";
    for (const std::string &f : hf.unknown)
      llvm::errs() << " " << f;
    llvm::errs() << "\n";
  }
  text = hf.toml;
  return true;
}

std::optional<ArchSpec> loadSpec(const std::string &path, std::string &text) {
  std::vector<SpecError> errors;
  std::string why, config;
  bool hf = isHFConfig(path, config);
  if (hf ? !hfSpecText(config, "", text) : !readSpecText(path, text, why)) {
    if (!hf)
      fail(path + ": " + why);
    return std::nullopt;
  }
  // An imported spec's errors name the lines of the text import-hf prints.
  auto spec = parseSpecString(text, hf ? config + " (as imported)" : path,
                              errors);
  for (const SpecError &e : errors)
    llvm::errs() << e.str() << "\n";
  if (!errors.empty())
    llvm::errs() << errors.size() << " error" << (errors.size() > 1 ? "s" : "")
                 << " in " << path << "\n";
  return spec;
}


/// ARCHC_SANITIZE=1: every library archc builds carries the sanitized
/// runtime (the sanitizer test suite sets it).
bool sanitizeByDefault() {
  const char *v = getenv("ARCHC_SANITIZE");
  return v && std::string(v) == "1";
}

bool showProgress(bool quiet) { return !quiet && isatty(2); }

/// Only `archc compile` registers MLIR's pass-manager options.
bool passManagerOptionsRegistered = false;

/// Which passes run (archc compile's flags; run and bench take the default).
struct PipelineOptions {
  std::vector<std::string> disabled; ///< --disable-pass
  std::string pipeline;              ///< --pass-pipeline, replaces the default
  std::string dumpDir;               ///< --dump-ir: one file per stage
  bool importOnly = false;           ///< --emit=import: no pass at all
  int dumpNext = 0;                  ///< the next --dump-ir file's number
  std::string target = "host";       ///< what target-dependent passes tune for
  std::string weightType = "f32";    ///< --weight-type
  std::string inputType = "f32";     ///< --matmul-input
  std::string attentionInput = "f32"; ///< --attention-input
} pipelineOpts;

/// Writes the module after each top-level pass (a nested pipeline counts
/// as one) to DIR/NN-<pass>.mlir; `failed` once a file could not be
/// written (the error is reported then).
class DumpIR : public mlir::PassInstrumentation {
public:
  DumpIR(std::string dir, int &next) : dir(std::move(dir)), next(next) {}
  bool failed = false;
  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override {
    if (!llvm::isa<mlir::ModuleOp>(op))
      return;
    // A pass by its flag; a nested pipeline as its text.
    std::string text = pass->getArgument().str();
    llvm::raw_string_ostream os(text);
    if (text.empty())
      pass->printAsTextualPipeline(os);
    std::string name;
    for (char c : os.str())
      name += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ||
                      c == '.'
                  ? c
                  : '-';
    while (!name.empty() && name.back() == '-')
      name.pop_back();
    write(op, name);
  }
  /// Writes `op` as the next stage, named `name`.
  void write(mlir::Operation *op, const std::string &name) {
    char num[8];
    snprintf(num, sizeof num, "%02d-", next++);
    std::string path = dir + "/" + num + name + ".mlir", text, error;
    llvm::raw_string_ostream os(text);
    op->print(os, mlir::OpPrintingFlags().enableDebugInfo(false));
    if (!failed && !writeOutput(path, os.str(), error)) {
      fail("--dump-ir: " + error);
      failed = true;
    }
  }

private:
  std::string dir;
  int &next;
};

static bool endsWith(const std::string &s, const char *suffix) {
  size_t n = strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

/// A context whose diagnostics print as `file:line:col: error: ...` with
/// the source line (of the spec or of the .mlir input).
struct Context {
  mlir::MLIRContext ctx;
  llvm::SourceMgr sources;
  mlir::SourceMgrDiagnosticHandler diagnostics{sources, &ctx};
};

/// The arch IR of `input`, verified: a TOML spec imported, or an .mlir
/// file parsed (IR as --emit=mlir or --dump-ir wrote it, perhaps edited).
/// `text` gets the spec's text (empty for IR), `specOut` the spec.
mlir::OwningOpRef<mlir::ModuleOp>
loadModule(Context &c, const std::string &input, std::string &text,
           std::optional<ArchSpec> *specOut = nullptr) {
  mlir::MLIRContext &ctx = c.ctx;
  text.clear();
  if (!endsWith(input, ".mlir")) {
    auto spec = loadSpec(input, text);
    if (!spec)
      return nullptr;
    if (specOut)
      *specOut = spec;
    mlir::OwningOpRef<mlir::ModuleOp> module = importSpec(ctx, *spec);
    if (failed(mlir::verify(*module)))
      return nullptr;
    return module;
  }
  ctx.loadDialect<ArchDialect, mlir::func::FuncDialect>();
  // The parser verifies what it reads and reports errors with their place.
  auto buffer = llvm::MemoryBuffer::getFile(input);
  if (!buffer) {
    fail(input + ": " + buffer.getError().message());
    return nullptr;
  }
  c.sources.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(
      c.sources, mlir::ParserConfig(&ctx));
  if (!module)
    fail(input + ": not a valid arch IR module (errors above)");
  return module;
}

/// Every tokens and ring cache of `module` whose rows are heads (the KV
/// caches) stores `type`. A state cache (linear attention's) stays f32, as
/// does a cache of 1-D rows (multi-head latent attention's latents, which
/// linears read to make the keys and values: they take f32 inputs).
void setKvType(mlir::ModuleOp module, StoreType type) {
  mlir::Type elem = archk::storeElementType(module.getContext(), type);
  for (CacheOp c : module.getOps<CacheOp>())
    if (c.getLayout() != CacheLayout::state && c.getRowType().getRank() == 2)
      c.setRow(mlir::RankedTensorType::get(c.getRowType().getShape(), elem));
}

/// Runs the pipeline over `module` (imported or parsed), or with
/// `kernels` the lowering to planned kernel calls after it. Pass-manager
/// CL options (IR printing, timing) and --dump-ir apply to both.
bool runPipeline(mlir::MLIRContext &ctx, mlir::ModuleOp module,
                 bool kernels = false) {
  PipelineOptions &po = pipelineOpts;
  if (po.importOnly)
    return true;
  mlir::PassManager pm(&ctx);
  if (passManagerOptionsRegistered) {
    if (failed(mlir::applyPassManagerCLOptions(pm))) {
      fail("invalid pass manager options");
      return false;
    }
    mlir::applyDefaultTimingPassManagerCLOptions(pm);
  }
  std::string error;
  if (kernels) {
    buildKernelLowering(pm, po.disabled);
  } else if (!po.pipeline.empty()) {
    // The passes go into `pm`, which is anchored on builtin.module already.
    llvm::StringRef text = po.pipeline;
    if (text.consume_front("builtin.module(") && !text.consume_back(")"))
      text = po.pipeline;
    llvm::raw_string_ostream es(error);
    if (failed(mlir::parsePassPipeline(text, pm, es))) {
      fail("--pass-pipeline: " + es.str());
      return false;
    }
  } else {
    std::string canonical;
    int lanes = 0;
    if (!resolveTarget(po.target, canonical, error, &lanes)) {
      fail(error);
      return false;
    }
    PipelineTarget t;
    t.lanes = lanes;
    t.weightType = po.weightType;
    t.inputType = po.inputType;
    t.attentionInput = po.attentionInput;
    if (failed(buildDefaultPipeline(pm, po.disabled, error, t))) {
      fail(error);
      return false;
    }
  }
  DumpIR *dumped = nullptr; // owned by pm
  if (!po.dumpDir.empty()) {
    std::error_code ec;
    fs::create_directories(po.dumpDir, ec);
    if (ec) {
      fail("--dump-ir: cannot create " + po.dumpDir + ": " + ec.message());
      return false;
    }
    // An earlier run's stages go first: a longer pipeline's later files
    // would otherwise read as this run's.
    if (po.dumpNext == 0)
      for (const auto &e : fs::directory_iterator(po.dumpDir, ec)) {
        std::string n = e.path().filename().string();
        if (n.size() > 8 && std::isdigit((unsigned char)n[0]) &&
            std::isdigit((unsigned char)n[1]) && n[2] == '-' &&
            endsWith(n, ".mlir") && e.is_regular_file(ec))
          fs::remove(e.path(), ec);
      }
    auto dump = std::make_unique<DumpIR>(po.dumpDir, po.dumpNext);
    if (!kernels)
      dump->write(module.getOperation(), "import");
    dumped = dump.get();
    pm.addInstrumentation(std::move(dump));
  }
  return succeeded(pm.run(module)) && !(dumped && dumped->failed);
}

/// The IR of `input` (spec text `specText`), after the pipeline -> shared
/// library (or relocatable object) at `out`.
bool buildModule(mlir::ModuleOp module, const std::string &input,
                 const std::string &specText, const BuildOptions &opts,
                 const std::string &out, bool quiet, BuildStats *stats) {
  LoweredModel lowered;
  if (!runPipeline(*module.getContext(), module, /*kernels=*/true) ||
      failed(emitGlue(module, {input, specText}, lowered)))
    return false;
  BuildOptions o = opts;
  if (showProgress(quiet))
    o.progress = [](size_t done, size_t total) {
      fprintf(stderr, "\r[archc] compiled %zu/%zu kernels", done, total);
      if (done == total)
        fprintf(stderr, "\n");
    };
  std::string error;
  if (!buildLibrary(lowered, o, out, error, stats)) {
    fail(error);
    return false;
  }
  return true;
}

/// Spec or IR at `input` -> shared library (or relocatable object) at
/// `out`.
bool compileToLibrary(const std::string &input, const BuildOptions &opts,
                      const std::string &out, bool quiet, BuildStats *stats) {
  Context c;
  std::string specText;
  auto module = loadModule(c, input, specText);
  return module && runPipeline(c.ctx, *module) &&
         buildModule(*module, input, specText, opts, out, quiet, stats);
}

// ---- compile ---------------------------------------------------------------

enum class Emit { Import, MLIR, Kernels, Halide, C, Obj, Lib };

int cmdCompile(int argc, char **argv) {
  cl::opt<std::string> input(cl::Positional, cl::Required,
                             cl::desc("<spec.toml | model.mlir | model directory | model.gguf>"),
                             cl::cat(archcCat));
  cl::opt<std::string> output("o", cl::desc("output file (default: "
                                            "lib<model>.so; '-' = stdout)"),
                              cl::value_desc("file"), cl::cat(archcCat));
  cl::opt<Emit> emit(
      "emit", cl::desc("how far to lower"), cl::init(Emit::Lib),
      cl::values(clEnumValN(Emit::Import, "import",
                            "arch IR as imported, before any pass"),
                 clEnumValN(Emit::MLIR, "mlir", "optimized arch IR"),
                 clEnumValN(Emit::Kernels, "kernels",
                            "planned kernel calls on buffers (archk)"),
                 clEnumValN(Emit::Halide, "halide",
                            "lowered Halide statement of every kernel"),
                 clEnumValN(Emit::C, "c", "host glue C"),
                 clEnumValN(Emit::Obj, "obj", "one relocatable object"),
                 clEnumValN(Emit::Lib, "lib", "shared library (default)")),
      cl::cat(archcCat));
  cl::opt<std::string> target(
      "target", cl::desc("'host' or a Halide target string"),
      cl::init("host"), cl::cat(archcCat));
  cl::opt<bool> quiet("quiet", cl::desc("no progress output"),
                      cl::cat(archcCat));
  cl::opt<bool> noCache(
      "no-cache",
      cl::desc("compile every kernel and the Halide runtime: neither read "
               "nor write the cache ($ARCHC_CACHE/kernels, default "
               "~/.cache/archc)"),
      cl::cat(archcCat));
  cl::opt<bool> printStats(
      "build-stats",
      cl::desc("print the build's figures: kernels compiled and taken "
               "from the cache, seconds per step"),
      cl::cat(archcCat));
  cl::opt<StoreType> kvType(
      "kv-type",
      cl::desc("element type of the KV caches (converted on append; "
               "attention computes in f32)"),
      cl::init(StoreType::f32),
      cl::values(clEnumValN(StoreType::f32, "f32", "4 bytes (default)"),
                 clEnumValN(StoreType::f16, "f16", "IEEE half, 2 bytes"),
                 clEnumValN(StoreType::bf16, "bf16", "bfloat16, 2 bytes")),
      cl::cat(archcCat));
  cl::opt<StoreType> weightType(
      "weight-type",
      cl::desc("element type of the matmul weights (converted once at load "
               "from the checkpoint's F32/F16/BF16, stored packed; products "
               "and sums in f32)"),
      cl::init(StoreType::f32),
      cl::values(clEnumValN(StoreType::f32, "f32", "4 bytes (default)"),
                 clEnumValN(StoreType::f16, "f16", "IEEE half, 2 bytes"),
                 clEnumValN(StoreType::bf16, "bf16", "bfloat16, 2 bytes")),
      cl::cat(archcCat));
  cl::opt<StoreType> attentionInput(
      "attention-input",
      cl::desc("what prefill's attention tiles take Q.K^T and P.V as: f32 "
               "(default) or bf16 (queries, keys, the blocks' exponentials "
               "and values rounded to bf16, sums in f32: vdpbf16ps where "
               "the CPU has AVX512-BF16, emulated and slower elsewhere; "
               "decode stays f32; attention with Shaw positions or an odd "
               "head_dim stays f32)"),
      cl::init(StoreType::f32),
      cl::values(clEnumValN(StoreType::f32, "f32", "f32 (default)"),
                 clEnumValN(StoreType::bf16, "bf16", "bf16 dot products")),
      cl::cat(archcCat));
  cl::opt<StoreType> matmulInput(
      "matmul-input",
      cl::desc("what the matmuls over 16-bit weights take their input as: "
               "bf16 (rounded: the bf16 dot product, vdpbf16ps where the "
               "CPU has AVX512-BF16) or f32; the default with "
               "--weight-type=bf16 is bf16 where the target runs the dot "
               "product faster than widened weights (this CPU with "
               "AVX512-BF16 and without AVX512-FP16, a Zen 4 or 5), else "
               "f32"),
      cl::init(StoreType::f32),
      cl::values(clEnumValN(StoreType::f32, "f32", "4 bytes"),
                 clEnumValN(StoreType::bf16, "bf16", "bfloat16, 2 bytes")),
      cl::cat(archcCat));
  cl::opt<int64_t> maxChunk(
      "max-chunk",
      cl::desc("most tokens one forward call takes (longer prompts run in "
               "calls of this many; sizes the activation buffers and the "
               "sliding-window ring caches; default 256)"),
      cl::value_desc("tokens"), cl::init(kDefaultMaxChunk),
      cl::cat(archcCat));
  cl::opt<bool> sanitize(
      "sanitize",
      cl::desc("build the glue and the runtime with AddressSanitizer and "
               "UBSan (load with the sanitizer runtimes preloaded; "
               "ARCHC_SANITIZE=1 makes it the default)"),
      cl::init(sanitizeByDefault()),
      cl::cat(archcCat));
  // cl::desc keeps a reference: the text lives as long as the option.
  std::string disableHelp = "leave this pass out of the default pipeline "
                            "(repeatable, or comma-separated):";
  for (const std::string &p : defaultPipelinePasses())
    disableHelp += (disableHelp.back() == ':' ? " " : ", ") + p;
  cl::list<std::string> disablePass("disable-pass", cl::desc(disableHelp),
                                    cl::value_desc("name"), cl::CommaSeparated,
                                    cl::cat(archcCat));
  cl::opt<std::string> passPipeline(
      "pass-pipeline",
      cl::desc("run this textual pipeline instead of the default, e.g. "
               "'arch-fuse-qkv,arch-hoist-param-prep'"),
      cl::value_desc("pipeline"), cl::cat(archcCat));
  cl::opt<std::string> dumpIR(
      "dump-ir",
      cl::desc("write the IR after import and after each pass to "
               "DIR/NN-<pass>.mlir (an earlier run's NN-*.mlir there "
               "removed first)"),
      cl::value_desc("dir"), cl::cat(archcCat));
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  mlir::registerTransformsPasses();
  registerArchPassesAndPipelines();
  passManagerOptionsRegistered = true;
  // --help lists archc's options and MLIR's (IR printing, timing, context);
  // the hundreds of LLVM backend options linked in stay accepted, listed by
  // --help-hidden.
  for (auto &opt : cl::getRegisteredOptions()) {
    llvm::StringRef name = opt.first();
    if (!llvm::is_contained(opt.second->Categories, &archcCat) &&
        !name.starts_with("mlir-") && !name.starts_with("help"))
      opt.second->setHiddenFlag(cl::Hidden);
  }
  cl::ParseCommandLineOptions(argc, argv, "archc compile: spec -> library\n");
  if (!passPipeline.empty() && !disablePass.empty())
    return fail("--pass-pipeline replaces the default pipeline: it takes no "
                "--disable-pass");
  if (emit == Emit::Import &&
      (!passPipeline.empty() || !disablePass.empty() || !dumpIR.empty()))
    return fail("--emit=import runs no pass: it takes no --pass-pipeline, "
                "--disable-pass or --dump-ir");
  // A flag that sets `pass`'s `option` in the default pipeline: what a
  // value other than f32 asks of the pipeline the run has ("" if nothing
  // is missing, or the value is f32).
  auto missingPass = [&](const char *flag, StoreType value, std::string pass,
                         const char *option, const char *why) {
    if (value == StoreType::f32)
      return std::string();
    std::string f = std::string("--") + flag, owner = pass + "'";
    if (pass.back() != 's')
      owner += "s";
    if (emit == Emit::Import)
      return "--emit=import runs no pass: " + f + " (an option of " + pass +
             ") has no effect there";
    if (!passPipeline.empty())
      return f + " sets " + owner + " option in the default pipeline; with "
             "--pass-pipeline write " + pass + "{" + option +
             "=...} instead";
    if (llvm::is_contained(disablePass, pass))
      return f + "=" + stringifyEnum(value).str() + " needs " + pass + ": " +
             why;
    return std::string();
  };
  if (std::string error =
          missingPass("weight-type", weightType, "arch-pack-weights",
                      "weight-type", "16-bit weights are stored packed");
      !error.empty())
    return fail(error);
  if (matmulInput == StoreType::bf16 && weightType != StoreType::bf16)
    return fail("--matmul-input=bf16 (the bf16 dot product) needs "
                "--weight-type=bf16, got --weight-type=" +
                stringifyEnum(weightType).str());
  pipelineOpts.weightType = stringifyEnum(weightType).str();
  // (Without --matmul-input, bf16 weights take the bf16 dot product where
  // the target runs it faster than widened weights: docs/design.md.)
  pipelineOpts.inputType =
      weightType == StoreType::bf16 && !matmulInput.getNumOccurrences()
          ? (bf16DotProductPays(target) ? "bf16" : "f32")
          : stringifyEnum(matmulInput).str();
  if (std::string error =
          missingPass("attention-input", attentionInput, "arch-flash-tiling",
                      "dot", "only its tiles take bf16");
      !error.empty())
    return fail(error);
  pipelineOpts.attentionInput = stringifyEnum(attentionInput).str();
  pipelineOpts.disabled.assign(disablePass.begin(), disablePass.end());
  pipelineOpts.pipeline = passPipeline;
  pipelineOpts.dumpDir = dumpIR;
  pipelineOpts.importOnly = emit == Emit::Import;
  pipelineOpts.target = target;

  Context c;
  std::string text;
  auto module = loadModule(c, input, text);
  if (!module)
    return 1;
  // Given, they override the caches' types and the chunk (an IR input's
  // too).
  if (kvType.getNumOccurrences())
    setKvType(*module, kvType);
  if (maxChunk.getNumOccurrences()) {
    if (maxChunk < 1 || maxChunk > std::numeric_limits<int32_t>::max())
      return fail("--max-chunk must be in [1, 2147483647], got " +
                  std::to_string(maxChunk));
    (*module)->setAttr("arch.max_chunk",
                       mlir::Builder(&c.ctx).getI64IntegerAttr(maxChunk));
  }
  std::string out = output;
  if (emit == Emit::Lib || emit == Emit::Obj) {
    if (out.empty())
      out = "lib" + modelName(*module) + (emit == Emit::Lib ? ".so" : ".o");
    if (out == "-")
      return fail("--emit=lib and --emit=obj write a file, not stdout: name "
                  "one with -o");
    std::string error;
    if (!checkOutput(input, out, error))
      return fail(error);
    BuildOptions opts;
    opts.target = target;
    opts.relocatable = emit == Emit::Obj;
    opts.sanitize = sanitize;
    opts.kernelCache = !noCache;
    BuildStats stats;
    auto t0 = Clock::now();
    if (!runPipeline(c.ctx, *module) ||
        !buildModule(*module, input, text, opts, out, quiet, &stats))
      return 1;
    if (printStats)
      fprintf(stderr,
              "[archc] cache: %s\n"
              "[archc] kernels: %zu, %zu from the cache, %.2f s\n"
              "[archc] Halide runtime: %.2f s; glue (%s) and link: %.2f s\n",
              stats.cache.c_str(), stats.kernels, stats.cachedKernels,
              stats.kernelSeconds, stats.runtimeSeconds,
              stats.glueCompiler.c_str(), stats.linkSeconds);
    if (showProgress(quiet))
      fprintf(stderr, "[archc] wrote %s (%zu kernels, %zu from the cache, "
              "%.2f s)\n", out.c_str(), stats.kernels, stats.cachedKernels,
              since(t0));
    return 0;
  }
  if (out.empty())
    out = "-";
  std::string result, error;
  if (!checkOutput(input, out, error))
    return fail(error);

  if (!runPipeline(c.ctx, *module))
    return 1;
  llvm::raw_string_ostream os(result);
  if (emit != Emit::MLIR && emit != Emit::Import &&
      !runPipeline(c.ctx, *module, /*kernels=*/true))
    return 1;
  if (emit == Emit::MLIR || emit == Emit::Import || emit == Emit::Kernels) {
    module->print(os, mlir::OpPrintingFlags().enableDebugInfo(false));
  } else {
    LoweredModel lowered;
    if (failed(emitGlue(*module, {input, text}, lowered)))
      return 1;
    if (emit == Emit::C) {
      os << lowered.glue;
    } else {
      std::string canonical;
      if (!resolveTarget(target, canonical, error))
        return fail(error);
      if (lowered.largeBuffers)
        canonical += "-large_buffers";
      for (const KernelSpec &k : lowered.kernels) {
        std::string stmt;
        if (!kernelLoweredStmt(k, canonical, stmt, error))
          return fail("kernel " + k.name() + ": " + error);
        os << "// kernel " << k.name() << " (target " << canonical << ")\n"
           << stmt << "\n";
      }
    }
  }
  if (!writeOutput(out, os.str(), error))
    return fail(error);
  return 0;
}

// ---- check -----------------------------------------------------------------

int cmdCheck(int argc, char **argv) {
  // A subcommand of its own: libLLVM registers a global -threads.
  cl::SubCommand sub("check", "analytic report");
  cl::opt<std::string> input(cl::Positional,
                             cl::desc("<spec.toml | model.mlir | model directory | model.gguf>"),
                             cl::cat(archcCat), cl::sub(sub));
  cl::opt<bool> json("json", cl::desc("machine-readable output"),
                     cl::cat(archcCat), cl::sub(sub));
  cl::opt<bool> limits("limits",
                       cl::desc("print the bounds of every numeric spec key "
                                "(a Markdown table)"),
                       cl::cat(archcCat), cl::sub(sub));
  cl::opt<int64_t> context("context",
                           cl::desc("context length for FLOPs (default: "
                                    "max_seq_len)"),
                           cl::init(0), cl::cat(archcCat), cl::sub(sub));
  cl::opt<StoreType> weightType(
      "weight-type",
      cl::desc("the matmul weights' element type, as archc compile "
               "--weight-type stores them (the bytes a decoded token reads)"),
      cl::init(StoreType::f32),
      cl::values(clEnumValN(StoreType::f32, "f32", "4 bytes (default)"),
                 clEnumValN(StoreType::f16, "f16", "IEEE half, 2 bytes"),
                 clEnumValN(StoreType::bf16, "bf16", "bfloat16, 2 bytes")),
      cl::cat(archcCat), cl::sub(sub));
  cl::HideUnrelatedOptions(archcCat, sub);
  cl::ParseCommandLineOptions(argc, argv, "archc check: analytic report\n");
  if (limits) {
    llvm::outs() << "| key | min | max | why |\n|---|---|---|---|\n";
    for (const KeyBound &b : keyBounds())
      llvm::outs() << "| `" << b.key << "` | " << llvm::format("%.15g", b.min)
                   << " | " << llvm::format("%.15g", b.max) << " | " << b.why
                   << " |\n";
    return 0;
  }
  if (input.empty())
    return fail("archc check needs a spec file (or an .mlir module)");
  if (context < 0)
    return fail("--context must be >= 0 (0: max_seq_len), got " +
                std::to_string(context));
  // The figures are the IR's, after the default pipeline (with the
  // weight type compile would give it).
  pipelineOpts.weightType = stringifyEnum(weightType).str();
  pipelineOpts.inputType =
      weightType == StoreType::bf16 && bf16DotProductPays(pipelineOpts.target)
          ? "bf16"
          : "f32";
  Context c;
  std::string text;
  std::optional<ArchSpec> spec;
  auto module = loadModule(c, input, text, &spec);
  if (!module || !runPipeline(c.ctx, *module))
    return 1;
  mlir::FailureOr<ModelFigures> figures = computeModelFigures(*module);
  if (failed(figures))
    return 1;
  const ModelFigures &r = *figures;
  int64_t maxSeq = 0;
  if (auto a = (*module)->getAttrOfType<mlir::IntegerAttr>("arch.max_seq_len"))
    maxSeq = a.getInt();
  int64_t ctx = context > 0 ? int64_t(context) : maxSeq;
  double decode = r.decodeFlopsPerToken(ctx), prefill = r.prefillFlopsPerToken(ctx);
  std::string name = modelName(*module);
  if (json) {
    llvm::outs() << "{\"model\": " << jsonString(name)
                 << ", \"params\": " << r.params
                 << ", \"embedding_params\": " << r.embeddingParams
                 << ", \"active_params\": " << r.activeParams
                 << ", \"weight_bytes\": " << r.weightBytes
                 << ", \"kv_bytes_per_token\": " << r.kvBytesPerToken
                 << ", \"kv_elements_per_token\": " << r.kvElementsPerToken
                 << ", \"fixed_cache_bytes\": " << r.fixedCacheBytes
                 << ", \"context\": " << ctx << ", \"decode_flops_per_token\": "
                 << llvm::format("%.0f", decode)
                 << ", \"prefill_flops_per_token\": "
                 << llvm::format("%.0f", prefill)
                 << ", \"classifier_flops_per_token\": "
                 << 2 * r.classifierParams << ", \"last_row_flops\": "
                 << 2 * r.lastRowParams
                 << ", \"decode_weight_bytes\": " << r.matmulWeightBytes;
    if (spec)
      llvm::outs() << ", \"z_loss\": " << spec->output.zLoss
                   << ", \"naming\": \""
                   << namingNames()[size_t(spec->weights.naming)] << "\"";
    llvm::outs() << "}\n";
    return 0;
  }
  llvm::outs() << "model:                 " << name << " (" << input << ")\n"
               << "parameters:            " << withCommas(r.params)
               << " (embedding " << withCommas(r.embeddingParams) << ")\n"
               << "active per token:      " << withCommas(r.activeParams)
               << " (what decoding a token reads, embedding lookup excluded)\n"
               << "weight bytes:          " << withCommas(r.weightBytes) << "\n"
               << "KV cache per token:    " << withCommas(r.kvBytesPerToken)
               << " bytes (" << withCommas(r.kvElementsPerToken)
               << " elements, all layers)\n";
  if (r.fixedCacheBytes)
    llvm::outs() << "bounded caches:        " << withCommas(r.fixedCacheBytes)
                 << " bytes (ring and state caches, at any length)\n";
  llvm::outs() << "decode reads:          " << withCommas(r.matmulWeightBytes)
               << " bytes of " << stringifyEnum(weightType)
               << " matmul weights per token\n";
  llvm::outs() << "FLOPs per token:       decode at context " << ctx << ": "
               << llvm::format("%.4g", decode) << "; prefill of " << ctx
               << " tokens: " << llvm::format("%.4g", prefill) << "\n";
  if (!spec)
    return 0;
  llvm::outs() << "checkpoint names:      "
               << namingNames()[size_t(spec->weights.naming)] << "\n";
  if (spec->output.zLoss > 0)
    llvm::outs() << "z-loss coefficient:    " << llvm::format("%g", spec->output.zLoss)
                 << " (a training-time term: no effect on inference)\n";
  return 0;
}

// ---- run and bench -----------------------------------------------------------

/// A library to run: LIB as given, or a spec or IR compiled into a
/// temporary one.
struct Runnable {
  std::string libPath, tmpDir;
  std::unique_ptr<TempOnSignal> guard;
  double compileSeconds = 0;
  ~Runnable() {
    if (!tmpDir.empty()) {
      std::error_code ec;
      fs::remove_all(tmpDir, ec);
    }
  }
  bool prepare(const std::string &input, bool quiet) {
    std::string config;
    if (!endsWith(input, ".toml") && !endsWith(input, ".mlir") &&
        !isHFConfig(input, config)) {
      libPath = input;
      return true;
    }
    std::string tmpl = tempTemplate("archc-run");
    if (!makeTempDir(tmpl, &guard)) {
      fail("cannot create a temporary directory " + tmpl + ": " +
           std::strerror(errno));
      return false;
    }
    tmpDir = tmpl;
    libPath = tmpDir + "/libmodel.so";
    auto t0 = Clock::now();
    BuildOptions opts;
    opts.sanitize = sanitizeByDefault();
    if (!compileToLibrary(input, opts, libPath, quiet, nullptr))
      return false;
    compileSeconds = since(t0);
    return true;
  }
};

#define CHECK_RT(lib, call)                                                    \
  do {                                                                         \
    if ((call) != ARCHRT_OK)                                                   \
      return fail(lib.archrt_last_error());                                    \
  } while (0)

/// A model handle with weights, freed on scope exit.
struct LoadedModel {
  ModelLib &lib;
  archrt_model *model = nullptr;
  explicit LoadedModel(ModelLib &lib) : lib(lib) {}
  ~LoadedModel() {
    if (model)
      lib.archrt_model_free(model);
  }
};

/// --chat-template-kwargs: "" or a JSON object's text. 0, or the status
/// after the error is printed.
static int checkTemplateKwargs(const std::string &kwargs) {
  if (kwargs.empty())
    return 0;
  std::string error;
  size_t first = kwargs.find_first_not_of(" \t\r\n");
  if (!ChatTemplate::checkJSON(kwargs, "--chat-template-kwargs", error))
    return fail(error);
  if (first == std::string::npos || kwargs[first] != '{')
    return fail("--chat-template-kwargs: expected a JSON object, got " +
                kwargs);
  return 0;
}

/// A model as run and serve open it: its library (compiled from a spec
/// into a temporary directory where one is given), the model with its
/// weights, its tokenizer where one is found or given, and the places its
/// chat template may be.
struct OpenedModel {
  Runnable compiled;
  ModelLib lib;
  archrt_model *model = nullptr;
  archrt_tokenizer *tok = nullptr;
  archrt_model_info info{};
  /// The model directory, the tokenizer's, the GGUF weights (where a chat
  /// template and its special tokens are looked for, in that order).
  std::vector<std::string> chatPlaces;
  /// Why a GGUF weights file's tokenizer is not used: "" or " (...)".
  std::string tokenizerWhy;
  ~OpenedModel() {
    if (tok)
      lib.archrt_tokenizer_free(tok);
    if (model)
      lib.archrt_model_free(model);
  }
};

/// Opens `input` (a spec, IR, library, model directory or GGUF file) with
/// its weights and tokenizer: `weights` and `tokenizer` where given, else
/// a model directory's or a GGUF file's own. 0, or the status after the
/// error is printed.
static int openModel(const std::string &input, std::string weights,
                     std::string tokenizer, int threads, bool quiet,
                     OpenedModel &m, bool random = false) {
  // A model directory holds its weights (and maybe a tokenizer) too; a
  // GGUF file is its own weights (and tokenizer).
  std::error_code ec;
  bool directory = fs::is_directory(input, ec);
  if (random && !weights.empty())
    return fail("--random-weights and --weights exclude each other");
  if (weights.empty() && !random && !directory && !isGGUFFile(input))
    return fail("--weights is required (unless the input is a model "
                "directory or a GGUF file)");
  if (weights.empty() && !random)
    weights = input;
  // Its tokenizer: Hugging Face's tokenizer.json, else llama2.c's
  // tokenizer.bin.
  for (const char *name : {"tokenizer.json", "tokenizer.bin"})
    if (tokenizer.empty() && directory &&
        fs::is_regular_file(fs::path(input) / name, ec))
      tokenizer = (fs::path(input) / name).string();
  if (!m.compiled.prepare(input, quiet))
    return 1;
  ModelLib &lib = m.lib;
  std::string error;
  if (!lib.open(m.compiled.libPath, error))
    return fail(error);
  lib.archrt_set_num_threads(threads);
  CHECK_RT(lib, lib.archrt_model_create(&m.model));
  CHECK_RT(lib, lib.archrt_model_info_get(m.model, &m.info));
  // (Random weights: bench's seed, for benchmarks.)
  if (random)
    CHECK_RT(lib, lib.archrt_init_random(m.model, 1234));
  else
    CHECK_RT(lib, lib.archrt_load_weights(m.model, weights.c_str()));
  // A GGUF checkpoint usually carries its tokenizer: used when none is
  // given (and the prompt is token ids when it has none; why not is said
  // where the prompt is not).
  bool ggufWeights = !random && !fs::is_directory(weights, ec) &&
                     isGGUFFile(weights);
  if (tokenizer.empty() && ggufWeights &&
      lib.archrt_tokenizer_load(weights.c_str(), m.info.vocab_size,
                                &m.tok) != ARCHRT_OK) {
    m.tok = nullptr;
    m.tokenizerWhy = std::string(" (the weights' GGUF tokenizer: ") +
                     lib.archrt_last_error() + ")";
  }
  if (!m.tok && !tokenizer.empty())
    CHECK_RT(lib, lib.archrt_tokenizer_load(tokenizer.c_str(),
                                            m.info.vocab_size, &m.tok));
  if (directory)
    m.chatPlaces.push_back(input);
  if (!tokenizer.empty())
    m.chatPlaces.push_back(fs::path(tokenizer).parent_path().string());
  if (ggufWeights)
    m.chatPlaces.push_back(weights);
  for (std::string &p : m.chatPlaces)
    if (p.empty())
      p = ".";
  return 0;
}

/// The text of file `path` ("-": standard input); with `json` (its value
/// into `value` where given), JSON within the server's bounds (so that
/// llvm::json's recursive parser is not given any nesting); false with
/// `error` naming the file.
static bool fileText(const std::string &path, bool json, std::string &text,
                     std::string &error, llvm::json::Value *value = nullptr) {
  auto file = llvm::MemoryBuffer::getFileOrSTDIN(path);
  if (!file) {
    error = path + ": " + file.getError().message();
    return false;
  }
  text = (*file)->getBuffer().str();
  if (!json)
    return true;
  if (!serve::jsonWithinBounds(text, error)) {
    error = path + ": " + error;
    return false;
  }
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed) {
    error = path + ": not JSON: " + llvm::toString(parsed.takeError());
    return false;
  }
  if (value)
    *value = std::move(*parsed);
  return true;
}

/// The GBNF text of a grammar file, or of a JSON schema file's grammar
/// (`schema`); false with `error` naming the file.
static bool grammarText(const std::string &path, bool schema,
                        std::string &text, std::string &error) {
  if (!fileText(path, schema, text, error))
    return false;
  if (!schema)
    return true;
  std::string gbnf;
  if (!serve::schemaGrammar(text, gbnf, error)) {
    error = path + ": " + error;
    return false;
  }
  text = std::move(gbnf);
  return true;
}

/// The grammar of GBNF `text` (from `path`; a JSON schema's with
/// `schema`), whose start opens few enough parses; false with `error`.
static bool parseGrammar(const std::string &text, const std::string &path,
                         bool schema,
                         std::shared_ptr<const serve::Grammar> &out,
                         std::string &error) {
  out = serve::Grammar::parse(text, error);
  if (!out) {
    error = path + (schema ? " (its grammar)" : "") + ": " + error;
    return false;
  }
  if (serve::GrammarMatcher(out).overflowed()) {
    error = path + ": the grammar is too ambiguous: " +
            serve::GrammarMatcher::startLimits();
    return false;
  }
  return true;
}

/// --grammar's or --json-schema's grammar (null where neither is given);
/// false with `error`.
static bool loadGrammar(const std::string &grammarPath,
                        const std::string &schemaPath,
                        std::shared_ptr<const serve::Grammar> &out,
                        std::string &error) {
  if (grammarPath.empty() && schemaPath.empty())
    return true;
  if (!grammarPath.empty() && !schemaPath.empty()) {
    error = "--grammar and --json-schema both constrain the reply: give one";
    return false;
  }
  bool schema = grammarPath.empty();
  const std::string &path = schema ? schemaPath : grammarPath;
  if (path == "-") {
    // (Standard input is the prompt's, with --chat.)
    error = std::string(schema ? "--json-schema" : "--grammar") +
            " takes a file, not standard input";
    return false;
  }
  std::string text;
  return grammarText(path, schema, text, error) &&
         parseGrammar(text, path, schema, out, error);
}

int cmdRun(int argc, char **argv) {
  // A subcommand of its own: libLLVM registers a global -threads.
  cl::SubCommand sub("run", "generate text");
  cl::opt<std::string> input(cl::Positional, cl::Required,
                             cl::desc("<spec.toml | model.mlir | lib.so | model directory | model.gguf>"),
                             cl::cat(archcCat), cl::sub(sub));
  cl::opt<std::string> weights("weights",
                               cl::desc("llama2.c checkpoint, .safetensors, "
                                        "index.json, checkpoint directory or "
                                        "GGUF file (default: a model "
                                        "directory or GGUF file given as the "
                                        "input)"),
                               cl::cat(archcCat), cl::sub(sub));
  cl::opt<std::string> tokenizer("tokenizer",
                                 cl::desc("tokenizer.json or llama2.c tokenizer.bin (default: "
                                          "one in a model directory given as "
                                          "the input); without it, --prompt "
                                          "is token ids 1,2,3"),
                                 cl::cat(archcCat), cl::sub(sub));
  cl::opt<std::string> prompt("prompt", cl::desc("prompt text"),
                              cl::init(""), cl::cat(archcCat), cl::sub(sub));
  cl::opt<int> steps("n", cl::desc("tokens to generate"), cl::init(64),
                     cl::cat(archcCat), cl::sub(sub));
  cl::opt<float> temperature("temperature", cl::desc("0 = greedy"),
                             cl::init(0.0f), cl::cat(archcCat), cl::sub(sub));
  cl::opt<float> topP("top-p", cl::desc("nucleus sampling mass"),
                      cl::init(1.0f), cl::cat(archcCat), cl::sub(sub));
  cl::opt<unsigned long long> seed("seed", cl::desc("sampling seed"),
                                   cl::init(42), cl::cat(archcCat), cl::sub(sub));
  cl::opt<int> threads("threads", cl::desc("0 = one per core"), cl::init(0),
                       cl::cat(archcCat), cl::sub(sub));
  cl::opt<bool> quiet("quiet", cl::desc("print only the generated text"),
                      cl::cat(archcCat), cl::sub(sub));
  cl::opt<bool> chat("chat",
                     cl::desc("a conversation in the model's chat template: "
                              "--prompt, then each line of standard input, "
                              "is a user message; -n tokens a reply at most"),
                     cl::cat(archcCat), cl::sub(sub));
  cl::opt<std::string> system("system", cl::desc("--chat: a system message"),
                              cl::cat(archcCat), cl::sub(sub));
  cl::opt<std::string> chatTemplate(
      "chat-template",
      cl::desc("--chat: the template (a .jinja file, tokenizer_config.json, "
               "model directory or GGUF file) in place of the model's"),
      cl::cat(archcCat), cl::sub(sub));
  cl::opt<std::string> templateKwargs(
      "chat-template-kwargs",
      cl::desc("--chat: the template's other variables, a JSON object "
               "(e.g. '{\"enable_thinking\": false}')"),
      cl::cat(archcCat), cl::sub(sub));
  cl::opt<bool> verbosePrompt(
      "verbose-prompt",
      cl::desc("--chat: print each turn's new text and token ids to stderr"),
      cl::cat(archcCat), cl::sub(sub));
  cl::HideUnrelatedOptions(archcCat, sub);
  cl::opt<std::string> grammarPath(
      "grammar",
      cl::desc("hold the text generated (each reply, with --chat) to a "
               "GBNF grammar file (archc grammar checks one)"),
      cl::cat(archcCat), cl::sub(sub));
  cl::opt<std::string> schemaPath(
      "json-schema",
      cl::desc("hold it to JSON of a JSON schema file"), cl::cat(archcCat),
      cl::sub(sub));
  cl::ParseCommandLineOptions(argc, argv, "archc run: generate text\n");
  std::shared_ptr<const serve::Grammar> grammar;
  {
    std::string why;
    if (!loadGrammar(grammarPath, schemaPath, grammar, why))
      return fail(why);
  }
  // (A grammar's mask first where the nucleus cuts the distribution:
  // serve::ConstrainedReply.)
  bool maskFirst = temperature > 0 && topP < 1;
  if (!chat && (!system.empty() || !chatTemplate.empty() || verbosePrompt ||
                !templateKwargs.empty()))
    return fail("--system, --chat-template, --chat-template-kwargs and "
                "--verbose-prompt go with --chat");
  if (int rc = checkTemplateKwargs(templateKwargs))
    return rc;

  if (steps < 0)
    return fail("-n must be >= 0");
  if (threads < 0 || threads > kMaxThreads)
    return fail("--threads must be in [0, " + std::to_string(kMaxThreads) +
                "], got " + std::to_string(threads));
  // (The sampler's own checks, before a compile and a load.)
  if (!(temperature >= 0) || !std::isfinite(temperature))
    return fail("--temperature must be >= 0, got " +
                std::to_string(temperature));
  if (!(topP > 0 && topP <= 1))
    return fail("--top-p must be in (0, 1], got " + std::to_string(topP));
  OpenedModel m;
  if (int rc = openModel(input, weights, tokenizer, threads, quiet, m))
    return rc;
  ModelLib &lib = m.lib;
  const archrt_model_info &info = m.info;
  archrt_tokenizer *tok = m.tok;
  std::string error, &ggufTokenizer = m.tokenizerWhy;

  struct Cleanup {
    ModelLib &lib;
    archrt_seq *seq = nullptr;
    archrt_sampler *sampler = nullptr;
    ~Cleanup() {
      lib.archrt_seq_free(seq);
      lib.archrt_sampler_free(sampler);
    }
  } c{lib};
  std::vector<int32_t> tokens(size_t(info.max_seq_len) + 2);
  int32_t n = 0;
  if (chat) {
    if (!tok)
      return fail("--chat needs a tokenizer: a model directory's "
                  "tokenizer.json, --tokenizer, or a GGUF file's" +
                  ggufTokenizer);
    ChatFormat format;
    if (!loadChatFormat(m.chatPlaces, chatTemplate, format, error))
      return fail(error);
    CHECK_RT(lib, lib.archrt_seq_create(m.model, 0, &c.seq));
    CHECK_RT(lib, lib.archrt_sampler_create(info.vocab_size, temperature,
                                            topP, seed, &c.sampler));
    ChatOptions opts;
    opts.system = system;
    opts.firstPrompt = prompt;
    opts.maxReply = steps;
    opts.templateKwargs = templateKwargs;
    opts.verbosePrompt = verbosePrompt;
    opts.quiet = quiet;
    opts.grammar = grammar;
    opts.maskFirst = maskFirst;
    return runChat(lib, c.seq, tok, c.sampler, info, format, opts);
  }
  if (tok) {
    if (lib.archrt_tokenizer_encode(tok, prompt.c_str(), 1, 0, tokens.data(),
                                    info.max_seq_len, &n) != ARCHRT_OK)
      return fail(lib.archrt_last_error());
  } else {
    std::stringstream ss(prompt);
    std::string item;
    while (std::getline(ss, item, ',')) {
      char *end;
      errno = 0;
      long long v = strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end)
        return fail("--prompt without --tokenizer must be comma-separated "
                    "token ids, got '" + prompt.getValue() + "'" +
                    ggufTokenizer);
      if (errno == ERANGE || v < 0 || v >= info.vocab_size)
        return fail("--prompt: token id " + item + " is outside the "
                    "vocabulary [0, " + std::to_string(info.vocab_size) +
                    ")");
      if (n >= info.max_seq_len)
        return fail("--prompt: more token ids than max_seq_len (" +
                    std::to_string(info.max_seq_len) + ")");
      tokens[size_t(n++)] = int32_t(v);
    }
    if (n == 0)
      tokens[size_t(n++)] = 1;
  }
  if (n == 0)
    return fail("--prompt: the text encodes to no tokens (the tokenizer "
                "adds none before it): give a prompt");
  if (grammar && !tok)
    return fail("--grammar and --json-schema need a tokenizer: a model "
                "directory's tokenizer.json, --tokenizer, or a GGUF file's" +
                ggufTokenizer);
  CHECK_RT(lib, lib.archrt_seq_create(m.model, 0, &c.seq));
  CHECK_RT(lib, lib.archrt_sampler_create(info.vocab_size, temperature, topP,
                                          seed, &c.sampler));
  int room = info.max_seq_len - n;
  int total = std::min<int>(steps, room);
  auto emitToken = [&](int32_t prev, int32_t t) {
    if (tok)
      llvm::outs() << lib.archrt_tokenizer_decode(tok, prev, t);
    else
      llvm::outs() << t << " ";
    llvm::outs().flush();
  };
  if (tok)
    for (int32_t i = 1; i < n; ++i)
      emitToken(tokens[size_t(i - 1)], tokens[size_t(i)]);

  auto t0 = Clock::now();
  CHECK_RT(lib, lib.archrt_prefill(c.seq, tokens.data(), n));
  double prefillS = since(t0);
  t0 = Clock::now();
  int32_t prev = tokens[size_t(n - 1)], generated = 0;
  // (A text held to --grammar.)
  std::unique_ptr<serve::GrammarVocabulary> vocabulary;
  std::optional<serve::ConstrainedReply> held;
  if (grammar) {
    vocabulary = grammarVocabulary(lib, tok, info.vocab_size);
    held.emplace(*vocabulary, grammar, maskFirst);
  }
  for (int i = 0; i < total; ++i) {
    int32_t next;
    Sampled how = sampleToken(lib, c.sampler, lib.archrt_logits(c.seq),
                              held ? &*held : nullptr, next, error);
    if (how == Sampled::Failed ||
        (how == Sampled::End && !held->error().empty())) {
      llvm::outs() << "\n";
      llvm::outs().flush();
      return fail(how == Sampled::Failed ? error : held->error());
    }
    if (how == Sampled::End)
      break; // a whole sentence that nothing may follow
    if (tok && lib.archrt_tokenizer_is_stop(tok, next))
      break; // EOS (or BOS) ends the story
    if (held && !held->take(next)) {
      llvm::outs() << "\n";
      llvm::outs().flush();
      return fail(serve::ConstrainedReply::faultText(next));
    }
    emitToken(prev, next);
    ++generated;
    prev = next;
    if (i + 1 < total)
      CHECK_RT(lib, lib.archrt_decode(c.seq, next));
  }
  llvm::outs() << "\n";
  llvm::outs().flush();
  double decodeS = since(t0);
  if (held && !held->whole())
    fprintf(stderr, "[archc] the text ends before a whole sentence of the "
                    "grammar (-n %d)\n", int(steps));
  if (held && !quiet)
    fprintf(stderr, "[archc] grammar: the mask made at %zu of %zu tokens\n",
            held->masks(), held->sampled());
  if (!quiet)
    fprintf(stderr,
            "[archc] prompt %d tokens: %.1f tok/s; generated %d tokens: "
            "%.1f tok/s\n",
            n, n / std::max(prefillS, 1e-9), generated,
            generated / std::max(decodeS, 1e-9));
  return 0;
}

int cmdServe(int argc, char **argv) {
  cl::SubCommand sub("serve", "serve a model over HTTP");
  cl::opt<std::string> input(cl::Positional, cl::Required,
                             cl::desc("<spec.toml | model.mlir | lib.so | "
                                      "model directory | model.gguf>"),
                             cl::cat(archcCat), cl::sub(sub));
  cl::opt<std::string> weights("weights",
                               cl::desc("the checkpoint (default: a model "
                                        "directory or GGUF file given as the "
                                        "input)"),
                               cl::cat(archcCat), cl::sub(sub));
  cl::opt<std::string> tokenizer("tokenizer",
                                 cl::desc("tokenizer.json or tokenizer.bin "
                                          "(default: the model directory's "
                                          "or the GGUF file's)"),
                                 cl::cat(archcCat), cl::sub(sub));
  cl::opt<std::string> host("host", cl::desc("the address to listen on"),
                            cl::init("127.0.0.1"), cl::cat(archcCat),
                            cl::sub(sub));
  cl::opt<int> port("port", cl::desc("the port (0: any free one, printed)"),
                    cl::init(8080), cl::cat(archcCat), cl::sub(sub));
  cl::opt<std::string> alias("alias",
                             cl::desc("the model's id in responses "
                                      "(default: its name)"),
                             cl::cat(archcCat), cl::sub(sub));
  cl::opt<int> steps("n",
                     cl::desc("tokens a response at most where a request "
                              "gives no max_tokens (-1: to the context)"),
                     cl::init(-1), cl::cat(archcCat), cl::sub(sub));
  cl::opt<float> temperature("temperature",
                             cl::desc("where a request gives none (0 = "
                                      "greedy)"),
                             cl::init(1.0f), cl::cat(archcCat),
                             cl::sub(sub));
  cl::opt<float> topP("top-p", cl::desc("where a request gives none"),
                      cl::init(1.0f), cl::cat(archcCat), cl::sub(sub));
  cl::opt<int> threads("threads", cl::desc("0 = one per core"), cl::init(0),
                       cl::cat(archcCat), cl::sub(sub));
  cl::opt<std::string> chatTemplate(
      "chat-template",
      cl::desc("the template (a .jinja file, tokenizer_config.json, model "
               "directory or GGUF file) in place of the model's"),
      cl::cat(archcCat), cl::sub(sub));
  cl::opt<std::string> templateKwargs(
      "chat-template-kwargs",
      cl::desc("the template's other variables for every request, a JSON "
               "object (a request's chat_template_kwargs go after them)"),
      cl::cat(archcCat), cl::sub(sub));
  cl::opt<std::string> toolParser(
      "tool-call-parser",
      cl::desc("how the model writes tool calls, parsed into a response's "
               "tool_calls where a request gives tools: auto (from the chat "
               "template), none, hermes, llama3-json, mistral, "
               "mistral-args, deepseek, deepseek-v3.1"),
      cl::init("auto"), cl::cat(archcCat), cl::sub(sub));
  cl::opt<int> timeout("timeout",
                       cl::desc("seconds to read a request, and to write "
                                "each part of a response"),
                       cl::init(30), cl::cat(archcCat), cl::sub(sub));
  cl::opt<bool> verbosePrompt(
      "verbose-prompt",
      cl::desc("print each completion's prompt, token ids and reply to "
               "stderr"),
      cl::cat(archcCat), cl::sub(sub));
  cl::opt<bool> quiet("quiet", cl::desc("no line a request"),
                      cl::cat(archcCat), cl::sub(sub));
  cl::opt<bool> random("random-weights",
                       cl::desc("seeded random weights, as archc bench's "
                                "(for benchmarks: bench/serve.sh)"),
                       cl::cat(archcCat), cl::sub(sub));
  cl::opt<std::string> reasoningFormat(
      "reasoning-format",
      cl::desc("where a chat reply's <think> thought goes: auto "
               "(reasoning_content where the chat template thinks), "
               "deepseek (reasoning_content), none (the content)"),
      cl::init("auto"), cl::cat(archcCat), cl::sub(sub));
  cl::HideUnrelatedOptions(archcCat, sub);
  cl::ParseCommandLineOptions(argc, argv,
                              "archc serve: an OpenAI-style HTTP server "
                              "(/v1/chat/completions, /v1/completions)\n");
  if (port < 0 || port > 65535)
    return fail("--port must be in [0, 65535], got " + std::to_string(port));
  if (steps < -1)
    return fail("-n must be -1 or more, got " + std::to_string(steps));
  if (timeout < 1 || timeout > 3600)
    return fail("--timeout must be in [1, 3600] seconds, got " +
                std::to_string(timeout));
  if (threads < 0 || threads > kMaxThreads)
    return fail("--threads must be in [0, " + std::to_string(kMaxThreads) +
                "], got " + std::to_string(threads));
  if (!(temperature >= 0 && temperature <= 2))
    return fail("--temperature must be in [0, 2], got " +
                std::to_string(temperature));
  if (!(topP > 0 && topP <= 1))
    return fail("--top-p must be in (0, 1], got " + std::to_string(topP));
  if (int rc = checkTemplateKwargs(templateKwargs))
    return rc;
  serve::ToolFormat tools = serve::ToolFormat::None;
  if (toolParser != "auto" && !serve::toolFormatNamed(toolParser, tools))
    return fail("--tool-call-parser must be auto, none, hermes, llama3-json, "
                "mistral, mistral-args, deepseek or deepseek-v3.1, got '" +
                toolParser + "'");
  if (reasoningFormat != "auto" && reasoningFormat != "none" &&
      reasoningFormat != "deepseek")
    return fail("--reasoning-format must be auto, none or deepseek, got '" +
                reasoningFormat + "'");
  int bound = 0;
  std::string error;
  int listener = listenOn(host, port, bound, error);
  if (listener < 0)
    return fail(error);
  struct CloseOnError {
    int fd;
    ~CloseOnError() {
      if (fd >= 0)
        close(fd);
    }
  } closeOnError{listener};
  OpenedModel m;
  if (int rc = openModel(input, weights, tokenizer, threads, true, m, random))
    return rc;
  if (!m.tok)
    return fail("archc serve needs a tokenizer: a model directory's "
                "tokenizer.json, --tokenizer, or a GGUF file's" +
                m.tokenizerWhy);
  // Without a chat template the completions endpoint still serves; chat
  // requests are refused with the reason (an error in a template given
  // with --chat-template ends the server before it starts).
  ChatFormat format;
  std::string noChat;
  if (!loadChatFormat(m.chatPlaces, chatTemplate, format, noChat) &&
      noChat.rfind("no chat template", 0) != 0)
    return fail(noChat);
  ServeOptions opts;
  opts.host = host;
  opts.alias = alias;
  opts.temperature = temperature;
  opts.topP = topP;
  opts.maxTokens = steps;
  opts.templateKwargs = templateKwargs;
  opts.timeoutSeconds = timeout;
  opts.verbosePrompt = verbosePrompt;
  opts.quiet = quiet;
  if (toolParser == "auto" && format.tmpl)
    tools = serve::detectToolFormat(format.text);
  ServedModel served{m.lib,  m.model, m.tok,  m.info,
                     format.tmpl ? &format : nullptr, noChat, tools};
  served.templateThinks = format.tmpl && serve::templateThinks(format.text);
  served.thoughts = reasoningFormat == "deepseek" ||
                    (reasoningFormat == "auto" && served.templateThinks);
  closeOnError.fd = -1;
  return runServer(listener, bound, served, opts);
}

/// Resident memory of this process now, in bytes (0 if unknown).
double residentBytes() {
  std::ifstream statm("/proc/self/statm");
  long long pages = 0, resident = 0;
  if (!(statm >> pages >> resident))
    return 0;
  return double(resident) * double(sysconf(_SC_PAGESIZE));
}

/// Proportional set size: resident memory with a page mapped n times
/// counted 1/n per mapping. A ring cache is mapped twice in a row, which
/// resident-set figures count twice; this counts it once.
double proportionalBytes() {
  std::ifstream rollup("/proc/self/smaps_rollup");
  for (std::string key; rollup >> key;) {
    long long kb = 0;
    if (key == "Pss:" && rollup >> kb)
      return double(kb) * 1024.0;
    rollup.ignore(1 << 16, '\n');
  }
  return 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t k = v.size() / 2;
  return v.size() % 2 ? v[k] : (v[k - 1] + v[k]) / 2;
}

/// archc bench --profile: one kernel's figures, summed over its call sites:
/// its calls and work over the timed runs, its time in each run.
struct KernelTime {
  std::string kernel, op; ///< the symbol; the op kind ("linear")
  int64_t prefillCalls = 0, decodeCalls = 0;
  /// Seconds in each timed run's prefill, and in its decoded tokens.
  std::vector<double> prefillRuns, decodeRuns;
  /// The work counted (matmuls and attention; 0 elsewhere): FLOPs in
  /// prefill, bytes read in decode (weights; an attention's cache rows).
  double prefillFlops = 0, decodeBytes = 0;
  bool counted = false;
};

/// Whether op kind `op` is a matmul's (a linear, absorbed MLA's head
/// linear): counted, and summed into the matmuls' row.
static bool isMatmul(const std::string &op) {
  return op == "linear" || op == "head_linear";
}

/// Adds sequence `seq`'s profile to `kernels` (in first-call order) as
/// timed run `run`'s prefill or decode figures.
static bool addProfile(ModelLib &lib, archrt_seq *seq, bool decode,
                       size_t run, std::vector<KernelTime> &kernels) {
  int32_t n = 0;
  if (lib.archrt_seq_profile(seq, nullptr, 0, &n) != ARCHRT_OK)
    return false;
  std::vector<archrt_profile_site> sites(size_t(std::max(n, 0)));
  if (lib.archrt_seq_profile(seq, sites.data(), n, &n) != ARCHRT_OK)
    return false;
  for (const archrt_profile_site &site : sites) {
    auto it = std::find_if(kernels.begin(), kernels.end(),
                           [&](const KernelTime &k) {
                             return k.kernel == site.kernel;
                           });
    if (it == kernels.end()) {
      llvm::StringRef op(site.op);
      kernels.push_back({site.kernel, op.take_until([](char c) {
                                          return c == ' ';
                                        }).str()});
      it = std::prev(kernels.end());
    }
    std::vector<double> &runs = decode ? it->decodeRuns : it->prefillRuns;
    runs.resize(run + 1, 0.0);
    runs[run] += site.seconds;
    (decode ? it->decodeCalls : it->prefillCalls) += site.calls;
    (decode ? it->decodeBytes : it->prefillFlops) +=
        double(decode ? site.bytes : site.flops);
    // (A matmul is counted even if no call of it ran: rates "-", null.)
    it->counted |= site.flops > 0 || site.bytes > 0 || isMatmul(it->op);
  }
  return true;
}

/// The --profile table: each kernel's time per prefill and per decoded
/// token (the median over the timed runs, as the tok/s figures are) and
/// its share of the calls' (median) wall time, longest in prefill first,
/// then what the calls spent outside the kernels and the matmuls
/// together. `prefillRuns` and `decodeRuns` are each run's seconds.
static void printProfile(std::vector<KernelTime> kernels,
                         const std::vector<double> &prefillRuns,
                         const std::vector<double> &decodeRuns, int prompt,
                         int gen, bool json) {
  size_t runs = prefillRuns.size();
  auto med = [](const std::vector<double> &v) {
    return v.empty() ? 0.0 : median(v);
  };
  // Each run's seconds outside the kernels, and in the matmuls.
  KernelTime linears{"", "linear"}, outside;
  for (KernelTime *k : {&linears, &outside}) {
    k->prefillRuns.assign(runs, 0.0);
    k->decodeRuns.assign(runs, 0.0);
  }
  outside.prefillRuns = prefillRuns, outside.decodeRuns = decodeRuns;
  for (KernelTime &k : kernels) {
    k.prefillRuns.resize(runs, 0.0), k.decodeRuns.resize(runs, 0.0);
    bool matmul = isMatmul(k.op);
    for (size_t r = 0; r < runs; ++r) {
      outside.prefillRuns[r] -= k.prefillRuns[r];
      outside.decodeRuns[r] -= k.decodeRuns[r];
      if (matmul) {
        linears.prefillRuns[r] += k.prefillRuns[r];
        linears.decodeRuns[r] += k.decodeRuns[r];
      }
    }
    if (matmul) {
      linears.prefillFlops += k.prefillFlops;
      linears.decodeBytes += k.decodeBytes;
      linears.counted = true;
    }
  }
  std::stable_sort(kernels.begin(), kernels.end(),
                   [&](const KernelTime &a, const KernelTime &b) {
                     return med(a.prefillRuns) > med(b.prefillRuns);
                   });
  double prefillSeconds = med(prefillRuns), decodeSeconds = med(decodeRuns);
  auto per = [](double v, double n) { return n > 0 ? v / n : 0.0; };
  // Milliseconds a prefill and a decoded token (medians over the runs).
  auto msPrefill = [&](const KernelTime &k) { return med(k.prefillRuns) * 1e3; };
  auto msToken = [&](const KernelTime &k) {
    return per(med(k.decodeRuns), gen) * 1e3;
  };
  auto share = [](double seconds, double of) {
    return of > 0 ? seconds / of : 0.0;
  };
  // A kernel's rates: a run's FLOPs over its median prefill time, its
  // bytes over its median decode time; negative where it has none (a
  // mixture's expert no token chose, --gen 0), printed "-" (JSON: null).
  auto gflops = [&](const KernelTime &k) {
    double t = med(k.prefillRuns);
    return t > 0 ? per(k.prefillFlops, double(runs)) / t * 1e-9 : -1.0;
  };
  auto gbs = [&](const KernelTime &k) {
    double t = med(k.decodeRuns);
    return t > 0 ? per(k.decodeBytes, double(runs)) / t * 1e-9 : -1.0;
  };
  auto jsonRate = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f", v);
    return v < 0 ? std::string("null") : std::string(text);
  };
  double tokens = double(runs) * gen;
  if (json) {
    // (Calls and times per prefill and per decoded token, as the table's.)
    llvm::outs() << ", \"profile\": [";
    for (size_t i = 0; i < kernels.size(); ++i) {
      const KernelTime &k = kernels[i];
      llvm::outs() << (i ? ", " : "") << "{\"kernel\": " << jsonString(k.kernel)
                   << ", \"op\": " << jsonString(k.op)
                   << ", \"prefill_calls\": "
                   << llvm::format("%.2f", per(double(k.prefillCalls), runs))
                   << ", \"prefill_ms\": " << llvm::format("%.6f", msPrefill(k))
                   << ", \"decode_calls_per_token\": "
                   << llvm::format("%.2f", per(double(k.decodeCalls), tokens))
                   << ", \"decode_ms_per_token\": "
                   << llvm::format("%.6f", msToken(k));
      // (Rates where the work is counted: matmuls, attention.)
      if (k.counted)
        llvm::outs() << ", \"prefill_gflop_s\": " << jsonRate(gflops(k))
                     << ", \"decode_gb_s\": " << jsonRate(gbs(k));
      llvm::outs() << "}";
    }
    llvm::outs() << "], \"prefill_outside_kernels_ms\": "
                 << llvm::format("%.6f", msPrefill(outside))
                 << ", \"decode_outside_kernels_ms_per_token\": "
                 << llvm::format("%.6f", msToken(outside))
                 << ", \"linears_prefill_gflop_s\": "
                 << jsonRate(gflops(linears))
                 << ", \"linears_decode_gb_s\": " << jsonRate(gbs(linears))
                 << ", \"linears_prefill_gflop\": "
                 << llvm::format("%.6f", per(linears.prefillFlops, runs) * 1e-9)
                 << ", \"linears_decode_mb_per_token\": "
                 << llvm::format("%.6f",
                                 per(linears.decodeBytes, tokens) * 1e-6);
    return;
  }
  llvm::outs() << "profile:        per prefill of " << prompt
               << " tokens and per decoded token (medians over the runs), "
                  "summed over each kernel's call sites (shares of the "
                  "calls' wall time; GFLOP/s in prefill and GB/s read in "
                  "decode: a matmul's 2 K N a row and its weights, an "
                  "attention's query-key pairs and the cache rows they "
                  "see)\n"
               << "  prefill ms   share calls GFLOP/s decode ms/tok   share "
                  "calls   GB/s  op         kernel\n";
  auto rate = [](bool counted, double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", v);
    return counted && v >= 0 ? std::string(text) : std::string("-");
  };
  auto row = [&](const KernelTime &k, bool calls, const std::string &op,
                 const std::string &kernel) {
    // (Calls per prefill and per decoded token, a tenth where a site runs
    // for some tokens only (a mixture's experts); none for the rows that
    // are not one kernel's.)
    auto count = [&](int64_t c, double n) {
      if (!calls)
        return std::string("-");
      double v = per(double(c), n);
      char text[32];
      std::snprintf(text, sizeof text, v == std::floor(v) ? "%.0f" : "%.1f", v);
      return std::string(text);
    };
    llvm::outs() << llvm::format("  %10.3f %6.1f%% ", msPrefill(k),
                                 100 * share(med(k.prefillRuns), prefillSeconds))
                 << llvm::right_justify(count(k.prefillCalls, runs), 5) << " "
                 << llvm::right_justify(rate(k.counted, gflops(k)), 7)
                 << llvm::format(" %13.4f %6.1f%% ", msToken(k),
                                 100 * share(med(k.decodeRuns), decodeSeconds))
                 << llvm::right_justify(count(k.decodeCalls, tokens), 5) << " "
                 << llvm::right_justify(rate(k.counted, gbs(k)), 6) << "  "
                 << llvm::left_justify(op, 10) << " " << kernel << "\n";
  };
  for (const KernelTime &k : kernels)
    row(k, true, k.op, k.kernel);
  row(outside, false, "-", "(outside the kernels: runtime and glue)");
  if (linears.counted) {
    char what[128];
    std::snprintf(what, sizeof what,
                  "(the linears together: %.3f GFLOP a prefill, %.2f MB of "
                  "weights a decoded token)",
                  per(linears.prefillFlops, runs) * 1e-9,
                  per(linears.decodeBytes, tokens) * 1e-6);
    row(linears, false, "linear", what);
  }
}

int cmdBench(int argc, char **argv) {
  // A subcommand of its own: libLLVM registers a global -threads.
  cl::SubCommand sub("bench", "throughput");
  cl::opt<std::string> input(cl::Positional, cl::Required,
                             cl::desc("<spec.toml | model.mlir | lib.so | model directory | model.gguf>"),
                             cl::cat(archcCat), cl::sub(sub));
  cl::opt<std::string> weights("weights",
                               cl::desc("weights (default: random)"),
                               cl::cat(archcCat), cl::sub(sub));
  cl::opt<bool> random("random-weights",
                       cl::desc("seeded random weights (the default)"),
                       cl::cat(archcCat), cl::sub(sub));
  cl::opt<int> promptLen("prompt-len", cl::desc("prefill tokens"),
                         cl::init(128), cl::cat(archcCat), cl::sub(sub));
  cl::opt<int> gen("gen", cl::desc("decode steps"), cl::init(64),
                   cl::cat(archcCat), cl::sub(sub));
  cl::opt<int> threads("threads", cl::desc("0 = one per core"), cl::init(0),
                       cl::cat(archcCat), cl::sub(sub));
  cl::opt<int> runs("runs", cl::desc("repetitions (median reported)"),
                    cl::init(5), cl::cat(archcCat), cl::sub(sub));
  cl::opt<bool> json("json", cl::desc("machine-readable output"),
                     cl::cat(archcCat), cl::sub(sub));
  cl::opt<bool> quiet("quiet", cl::desc("no progress output"),
                      cl::cat(archcCat), cl::sub(sub));
  cl::opt<bool> profile("profile",
                        cl::desc("time every kernel call: each kernel's "
                                 "share of prefill and decode (its two clock "
                                 "reads a call are in every figure), and the "
                                 "matmuls' and attention's GFLOP/s and GB/s"),
                        cl::cat(archcCat), cl::sub(sub));
  cl::HideUnrelatedOptions(archcCat, sub);
  cl::ParseCommandLineOptions(argc, argv, "archc bench: throughput\n");

  if (promptLen < 1 || gen < 0 || runs < 1 || runs > 1000)
    return fail("--prompt-len must be >= 1, --gen >= 0, --runs in [1, 1000]");
  if (threads < 0 || threads > kMaxThreads)
    return fail("--threads must be in [0, " + std::to_string(kMaxThreads) +
                "], got " + std::to_string(threads));
  if (random && !weights.empty())
    return fail("--random-weights and --weights exclude each other");
  Runnable r;
  if (!r.prepare(input, quiet || json))
    return 1;
  ModelLib lib;
  std::string error;
  if (!lib.open(r.libPath, error))
    return fail(error);
  lib.archrt_set_num_threads(threads);
  LoadedModel m(lib);
  double rssBefore = residentBytes();
  CHECK_RT(lib, lib.archrt_model_create(&m.model));
  archrt_model_info info;
  CHECK_RT(lib, lib.archrt_model_info_get(m.model, &info));
  if (weights.empty())
    CHECK_RT(lib, lib.archrt_init_random(m.model, 1234));
  else
    CHECK_RT(lib, lib.archrt_load_weights(m.model, weights.c_str()));
  // What loading (and preparing) the weights left resident, against the
  // weights' own f32 bytes.
  double loadMiB = (residentBytes() - rssBefore) / 1048576.0;
  double weightMiB = double(info.n_params) * 4 / 1048576.0;
  int64_t needed = int64_t(promptLen) + int64_t(gen);
  if (needed > info.max_seq_len)
    return fail("--prompt-len + --gen (" + std::to_string(needed) +
                ") exceeds max_seq_len " + std::to_string(info.max_seq_len));

  std::vector<int32_t> prompt(size_t(promptLen.getValue()));
  for (size_t i = 0; i < prompt.size(); ++i)
    prompt[i] = int32_t((i * 7919 + 13) % size_t(info.vocab_size));
  std::vector<double> prefill, decode;
  // peakRun: what the model holds resident at its fullest (after a run's
  // decode: weights, caches, activations), against rssBefore.
  double firstPrefill = 0, peakPss = 0, peakRun = 0;
  std::vector<double> prefillRuns, decodeRuns; // each timed run's seconds
  std::vector<KernelTime> kernels; // --profile's, over the timed runs
  archrt_seq *seq = nullptr;
  CHECK_RT(lib, lib.archrt_seq_create(m.model, promptLen + gen, &seq));
  for (int run = 0; run <= runs; ++run) { // run 0 warms up
    bool timed = run > 0, ok = true;
    if (profile)
      ok = lib.archrt_seq_set_profiling(seq, 1) == ARCHRT_OK;
    auto t0 = Clock::now();
    if (!ok || lib.archrt_prefill(seq, prompt.data(), promptLen) != ARCHRT_OK)
      break;
    double p = since(t0);
    if (run == 0)
      firstPrefill = promptLen / p;
    // (Profiling restarted: decode's figures apart from prefill's.)
    if (profile && timed && !addProfile(lib, seq, false, run - 1, kernels))
      break;
    if (profile && lib.archrt_seq_set_profiling(seq, 1) != ARCHRT_OK)
      break;
    t0 = Clock::now();
    for (int i = 0; ok && i < gen; ++i)
      ok = lib.archrt_decode(seq, int32_t((i * 31 + 7) % info.vocab_size)) ==
           ARCHRT_OK;
    double d = since(t0);
    if (!ok ||
        (profile && timed && !addProfile(lib, seq, true, run - 1, kernels)))
      break;
    if (timed)
      prefillRuns.push_back(p), decodeRuns.push_back(d);
    // With the caches as full as they get.
    peakPss = std::max(peakPss, proportionalBytes());
    peakRun = std::max(peakRun, residentBytes() - rssBefore);
    if (run > 0) {
      prefill.push_back(promptLen / p);
      if (gen > 0)
        decode.push_back(gen / d);
    }
    // Start over: the cache is rewritten from position 0.
    lib.archrt_seq_free(seq);
    seq = nullptr;
    if (lib.archrt_seq_create(m.model, promptLen + gen, &seq) != ARCHRT_OK)
      break;
  }
  std::string err = lib.archrt_last_error();
  lib.archrt_seq_free(seq);
  if (int(prefill.size()) != runs)
    return fail(err);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double peakMiB = double(ru.ru_maxrss) / 1024.0;
  double pf = median(prefill), dc = decode.empty() ? 0 : median(decode);
  // The caches of the sequence the runs used (prompt + gen positions).
  double cacheMiB = (double(info.cache_bytes_per_token) * double(needed) +
                     double(info.fixed_cache_bytes)) /
                    1048576.0;
  if (json) {
    llvm::outs() << "{\"model\": " << jsonString(info.name) << ", \"params\": "
                 << info.n_params << ", \"threads\": " << threads
                 << ", \"prompt_len\": " << promptLen << ", \"gen\": " << gen
                 << ", \"runs\": " << runs
                 << ", \"compile_seconds\": " << llvm::format("%.3f", r.compileSeconds)
                 << ", \"prefill_tokens_per_s\": " << llvm::format("%.2f", pf)
                 << ", \"decode_tokens_per_s\": " << llvm::format("%.2f", dc)
                 << ", \"first_prefill_tokens_per_s\": "
                 << llvm::format("%.2f", firstPrefill)
                 << ", \"weight_mib\": " << llvm::format("%.1f", weightMiB)
                 << ", \"load_rss_mib\": " << llvm::format("%.1f", loadMiB)
                 << ", \"run_rss_mib\": "
                 << llvm::format("%.1f", peakRun / 1048576.0)
                 << ", \"peak_rss_mib\": " << llvm::format("%.1f", peakMiB)
                 << ", \"peak_pss_mib\": "
                 << llvm::format("%.1f", peakPss / 1048576.0)
                 << ", \"cache_bytes_per_token\": " << info.cache_bytes_per_token
                 << ", \"fixed_cache_bytes\": " << info.fixed_cache_bytes
                 << ", \"cache_mib\": " << llvm::format("%.1f", cacheMiB);
    if (profile)
      printProfile(kernels, prefillRuns, decodeRuns, promptLen, gen, true);
    llvm::outs() << "}\n";
    return 0;
  }
  llvm::outs() << "model:          " << info.name << " ("
               << withCommas(info.n_params) << " parameters)\n"
               << "threads:        " << (threads ? std::to_string(threads) : "default")
               << "\n";
  if (r.compileSeconds > 0)
    llvm::outs() << "compile:        " << llvm::format("%.2f s", r.compileSeconds)
                 << "\n";
  llvm::outs() << "prefill:        " << llvm::format("%.1f", pf) << " tok/s ("
               << promptLen << " tokens, median of " << runs << ")\n"
               << "decode:         " << llvm::format("%.1f", dc) << " tok/s ("
               << gen << " tokens after the prompt, median of " << runs << ")\n"
               << "first prefill:  " << llvm::format("%.1f", firstPrefill)
               << " tok/s (the warm-up call)\n"
               << "weights:        " << llvm::format("%.1f MiB", weightMiB)
               << " f32; resident after load "
               << llvm::format("%.1f MiB", loadMiB) << ", at the runs' fullest "
               << llvm::format("%.1f MiB", peakRun / 1048576.0)
               << " (caches and activations too)\n"
               << "peak memory:    " << llvm::format("%.1f MiB", peakMiB)
               << " resident; "
               << llvm::format("%.1f MiB", peakPss / 1048576.0)
               << " proportional (a ring cache's two mappings once)\n"
               << "caches:         " << info.cache_bytes_per_token
               << " bytes per position + " << info.fixed_cache_bytes
               << " fixed (rings); " << llvm::format("%.1f MiB", cacheMiB)
               << " for " << needed << " positions\n";
  if (profile)
    printProfile(kernels, prefillRuns, decodeRuns, promptLen, gen, false);
  return 0;
}

/// archc import-hf: a Hugging Face config.json (or model directory) as a
/// commented spec, checked by the spec parser before it is written.
int cmdImportHF(int argc, char **argv) {
  cl::SubCommand sub("import-hf", "a Hugging Face config.json as a spec");
  cl::opt<std::string> input(cl::Positional, cl::Required,
                             cl::desc("<config.json | model directory | "
                                      "model.gguf>"),
                             cl::cat(archcCat), cl::sub(sub));
  cl::opt<std::string> output("o", cl::desc("the spec file (default: "
                                            "stdout)"),
                              cl::init("-"), cl::cat(archcCat), cl::sub(sub));
  cl::opt<std::string> name("name", cl::desc("model name (default: the "
                                             "directory's, or the GGUF "
                                             "file's stem)"),
                            cl::cat(archcCat), cl::sub(sub));
  cl::HideUnrelatedOptions(archcCat, sub);
  cl::ParseCommandLineOptions(argc, argv,
                              "archc import-hf: a Hugging Face config as a "
                              "spec\n");
  std::string config, text;
  if (!isHFConfig(input, config))
    config = input; // read as JSON whatever its name
  if (!hfSpecText(config, name, text))
    return 1;
  std::vector<SpecError> errors;
  parseSpecString(text, config + " (as imported)", errors);
  for (const SpecError &e : errors)
    llvm::errs() << e.str() << "\n";
  if (!errors.empty())
    return fail("the spec imported from " + config + " has " +
                std::to_string(errors.size()) + " error(s) (above); nothing "
                "written");
  std::string error;
  if (!checkOutput(config, output, error) ||
      !writeOutput(output, text, error))
    return fail(error);
  return 0;
}

/// archc grammar: a GBNF grammar checked (or a JSON schema's grammar
/// printed), and texts matched against it: what archc serve's `grammar`,
/// `json_schema` and response_format constrain a reply to.
int cmdGrammar(int argc, char **argv) {
  using namespace arch::serve;
  cl::SubCommand sub("grammar", "check a GBNF grammar or a JSON schema's");
  cl::opt<std::string> input(cl::Positional, cl::Required,
                             cl::desc("<grammar.gbnf | schema.json | ->"),
                             cl::cat(archcCat), cl::sub(sub));
  cl::opt<bool> schema("json-schema",
                       cl::desc("the file is a JSON schema: print its "
                                "grammar"),
                       cl::cat(archcCat), cl::sub(sub));
  cl::opt<std::string> toolFormat(
      "tool-format",
      cl::desc("the file is a request's tools (a JSON array): print the "
               "grammar of calls in this format (hermes, llama3-json, "
               "mistral, mistral-args, deepseek, deepseek-v3.1; auto: "
               "--chat-template's) that tool_choice required gives"),
      cl::cat(archcCat), cl::sub(sub));
  cl::opt<std::string> chatTemplate(
      "chat-template",
      cl::desc("--tool-format auto: the chat template whose format the "
               "calls take, as archc serve finds it (a .jinja file, a "
               "tokenizer_config.json, a model directory, a GGUF file)"),
      cl::cat(archcCat), cl::sub(sub));
  cl::opt<std::string> toolName(
      "tool", cl::desc("--tool-format: calls of this tool only (a named "
                       "tool_choice)"),
      cl::cat(archcCat), cl::sub(sub));
  cl::opt<bool> parallel("parallel",
                         cl::desc("--tool-format: one or more calls"),
                         cl::cat(archcCat), cl::sub(sub));
  cl::opt<ThoughtBefore> thought(
      "thought", cl::desc("--tool-format: a thought before the calls"),
      cl::values(clEnumValN(ThoughtBefore::None, "none", "none (default)"),
                 clEnumValN(ThoughtBefore::Opened, "opened",
                            "the rest of one the prompt opened"),
                 clEnumValN(ThoughtBefore::Own, "own",
                            "one the model may open (<think>...)")),
      cl::init(ThoughtBefore::None), cl::cat(archcCat), cl::sub(sub));
  cl::list<std::string> match("match",
                              cl::desc("a text to match: prints 'whole', "
                                       "'prefix' or 'no' (after how many "
                                       "bytes)"),
                              cl::cat(archcCat), cl::sub(sub));
  cl::HideUnrelatedOptions(archcCat, sub);
  cl::ParseCommandLineOptions(argc, argv,
                              "archc grammar: a GBNF grammar checked, or a "
                              "JSON schema as one\n");
  std::string text, error;
  ToolFormat format = ToolFormat::None;
  if (!chatTemplate.empty() && toolFormat != "auto")
    return fail("--chat-template goes with --tool-format auto");
  if (!toolFormat.empty()) {
    if (schema)
      return fail("--json-schema and --tool-format: give one");
    if (toolFormat == "auto") {
      ChatFormat chat;
      if (chatTemplate.empty())
        return fail("--tool-format auto needs --chat-template");
      if (!loadChatFormat({}, chatTemplate, chat, error))
        return fail(error);
      format = detectToolFormat(chat.text);
      if (format == ToolFormat::None)
        return fail(chat.source + ": the chat template shows no tool-call "
                                  "format");
      llvm::errs() << "archc grammar: tool calls " << toolFormatName(format)
                   << " (" << chat.source << ")\n";
    } else if (!toolFormatNamed(toolFormat, format) ||
               format == ToolFormat::None) {
      return fail("--tool-format must be auto, hermes, llama3-json, mistral, "
                  "mistral-args, deepseek or deepseek-v3.1, got '" +
                  toolFormat + "'");
    }
    std::string tools;
    llvm::json::Value parsed = nullptr;
    if (!fileText(input, true, tools, error, &parsed))
      return fail(error);
    if (!parsed.getAsArray())
      return fail(input + ": not a JSON array of tools");
    if (!toolCallGrammar(format, tools, toolName, parallel, thought, text,
                         error))
      return fail(input + ": " + error);
    llvm::outs() << text;
  } else if (!grammarText(input, schema, text, error)) {
    return fail(error);
  }
  if (schema)
    llvm::outs() << text;
  std::shared_ptr<const Grammar> g;
  if (!parseGrammar(text, input, schema, g, error))
    return fail(error);
  GrammarMatcher start(g);
  for (const std::string &m : match) {
    GrammarMatcher matcher = start;
    size_t n = 0;
    while (n < m.size() && matcher.accept(llvm::StringRef(m).substr(n, 1)))
      ++n;
    if (matcher.overflowed())
      return fail(input + ": the grammar is too ambiguous to follow " +
                  jsonString(m) + " (more than " +
                  std::to_string(GrammarMatcher::kMaxParses) +
                  " parses at once, or " +
                  std::to_string(GrammarMatcher::kMaxWork) +
                  " steps to follow a character)");
    llvm::outs() << jsonString(m) << ": "
                 << (n < m.size() ? "no (after " + std::to_string(n) +
                                        " bytes)"
                     : matcher.complete() ? std::string("whole")
                                          : std::string("prefix"));
    if (format != ToolFormat::None && n == m.size() && matcher.complete()) {
      // (The calls the server's parser reads in such a reply, past its
      // thought.)
      size_t content = 0;
      if (thought != ThoughtBefore::None) {
        Thought th =
            findThought(m, thought == ThoughtBefore::Opened, true);
        content = th.content;
        llvm::outs() << ", a thought of "
                     << (th.begin == std::string::npos ? 0
                                                       : th.end - th.begin)
                     << " bytes";
      }
      ToolReply reply = parseToolCalls(format, m.substr(content));
      llvm::outs() << ", " << reply.calls.size() << " calls:";
      for (const ToolCall &call : reply.calls)
        llvm::outs() << " " << call.name << call.arguments;
    }
    llvm::outs() << "\n";
  }
  return 0;
}

int usage(int rc) {
  (rc ? llvm::errs() : llvm::outs())
      << "usage: archc <command> [options]\n\n"
         "commands:\n"
         "  compile SPEC    compile a TOML spec (or an .mlir module) to a "
         "shared library (--emit=mlir|halide|c|obj|lib)\n"
         "  check SPEC      parameter count, KV-cache bytes, FLOPs per token "
         "(of the optimized IR)\n"
         "  run SPEC|LIB    generate tokens with real weights (--chat: a "
         "conversation\n"
         "                  in the model's chat template)\n"
         "  serve SPEC|LIB  an OpenAI-style HTTP server (/v1/chat/completions,\n"
         "                  /v1/completions; streamed or whole)\n"
         "  bench SPEC|LIB  prefill and decode throughput\n"
         "  import-hf DIR   a Hugging Face config.json (or a GGUF file's "
         "metadata) as a\n"
         "                  spec (compile, check, run and bench take the "
         "model directory\n"
         "                  or the GGUF file as SPEC too)\n"
         "  chat-template MODEL\n"
         "                  a conversation (JSON messages) rendered in the "
         "model's chat\n"
         "                  template, as Hugging Face's apply_chat_template\n"
         "  grammar FILE    a GBNF grammar checked (--json-schema: a JSON "
         "schema's printed),\n"
         "                  texts matched against it (--match)\n\n"
         "'archc <command> --help' lists the options of a command.\n";
  return rc;
}

} // namespace

int main(int argc, char **argv) {
  // A signal that ends archc leaves no temporaries (lowering/OutputFile.h).
  removeTempsOnSignal();
  if (argc < 2)
    return usage(1);
  std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help")
    return usage(0);
  // The subcommand parses the rest; its name joins argv[0] for messages.
  if (cmd == "check")
    return cmdCheck(argc, argv);
  if (cmd == "run")
    return cmdRun(argc, argv);
  if (cmd == "bench")
    return cmdBench(argc, argv);
  if (cmd == "import-hf")
    return cmdImportHF(argc, argv);
  if (cmd == "chat-template")
    return cmdChatTemplate(argc, argv, archcCat);
  if (cmd == "serve")
    return cmdServe(argc, argv);
  if (cmd == "grammar")
    return cmdGrammar(argc, argv);
  if (cmd == "compile") {
    // compile takes MLIR's top-level pass-manager options: parse it as a
    // program of its own named "archc compile".
    std::string prog = "archc compile";
    std::vector<char *> args = {prog.data()};
    for (int i = 2; i < argc; ++i)
      args.push_back(argv[i]);
    return cmdCompile(int(args.size()), args.data());
  }
  llvm::errs() << "archc: error: unknown command '" << cmd << "'\n";
  return usage(1);
}
