//===- Algorithms.h - Halide algorithms of the arch ops --------*- C++ -*-===//
//
// One lower<Op>() per kernel kind builds the Halide Funcs (the algorithm
// only); Schedules.cpp decides loop order, tiling and vectorization per
// target. Internal to lowering/: includes Halide.h.
//
//===----------------------------------------------------------------------===//
#ifndef ARCHC_LOWERING_ALGORITHMS_H
#define ARCHC_LOWERING_ALGORITHMS_H

#include "arch/Kernel/Kernels.h"

#include <Halide.h>

namespace arch {

/// The L2 a kernel's blocking is sized for when the target is not this
/// CPU (or this CPU does not say): 1 MiB, the Zen 5's.
constexpr int64_t kDefaultL2Bytes = int64_t(1) << 20;

/// Token rows per GEMM tile: a linear takes tiles of this many rows when a
/// call has at least as many (its GEMM specialization).
constexpr int kTokenTile = 4;

/// Token rows per GEMM tile of a packed linear where the target has 32
/// vector registers (AVX-512), for calls of at least as many rows: 6 rows
/// x 4 vectors of columns (24 accumulators), each weight vector loaded
/// once for 6 tokens where 4 took it from the L2 once for 4.
constexpr int kTallTokenTile = 6;

/// Mixed token tiles: a GEMM of tall tiles (kTallTokenTile) called with
/// kMixedRows to kMixedEnd - 1 rows, 1 or 2 over a multiple of 6, takes
/// 6-token tiles over all but the last 7 or 8 rows and two 4-token tiles
/// over those, in each task, where the tall tiles alone would end on a
/// tile over 5 or 4 rows its neighbour has (ShiftInwards): a 128-row call
/// computes 128 rows, not 132. Each part's sums go to a buffer of the
/// task, which the output's rows are stored from; that copy costs about
/// 1%, what one 4-token tile saves (calls 3 or 4 over a multiple of 6)
/// and more than the rows saved in long calls, so those keep the tall
/// tiles (docs/performance.md "Mixed token tiles"). A 16-bit weight's
/// GEMM takes them from kWideRows, over its widened panel.
constexpr int kMixedRows = 24;
constexpr int kMixedEnd = 160;

/// A kernel's algorithm: its output, its arguments in call order (made
/// from spec.args(); the output last, added by the emitter), and the Funcs
/// and Vars its schedule needs.
struct KernelFuncs {
  explicit KernelFuncs(KernelSpec spec) : spec(std::move(spec)) {}
  KernelSpec spec;
  Halide::Func out;
  std::vector<Halide::Argument> args;
  std::map<std::string, Halide::ImageParam> inputs; ///< by argument name
  Halide::Param<int32_t> pos{"pos"};
  /// The input buffer `name` of spec.args().
  Halide::ImageParam in(const std::string &name) const {
    return inputs.at(name);
  }
  std::map<std::string, Halide::Func> funcs;
  std::map<std::string, Halide::Var> vars;
  std::map<std::string, Halide::RDom> rdoms;
  int lanes = 1; ///< vector width the algorithm split its reductions by
  int64_t l2Bytes = kDefaultL2Bytes; ///< the L2 the GEMM's blocks fit
  /// A packed GEMM's register tile height (gemmTileRows): the schedule's
  /// tall tiles, and the K-blocked GEMM's in every call of >= 4 rows (not
  /// the bf16 dot product's, whose tiles keep kTokenTile rows);
  /// kTallTokenTile's GEMMs take mixed tiles (kMixedRows).
  int tileRows = kTokenTile;
  /// A packed GEMM's condition for mixed token tiles (kMixedRows), which
  /// its algorithm selects them on and its schedule specializes on: one
  /// expression, which Halide folds in every specialization, so that each
  /// computes only its own sums. Undefined where the GEMM takes none.
  Halide::Expr mixedCall;
  std::vector<int64_t> outDims; ///< static extents of the output's features
  bool denseOutputRows = true;  ///< else a view (a copy's destination)
  /// Whether the schedule calls the ukernels (lowering/ukernels.ll), which
  /// the emitter then links into the kernel's module.
  bool ukernels = false;
  /// Whether f16 elements convert by the archu_f16_f32 ukernels (one
  /// vcvtph2ps): a ukernelTarget with F16C (toF32 in Algorithms.cpp).
  bool f16c = false;
  /// Whether the target has AMX tiles (the emitter's input): a bf16 GEMM
  /// in pairs then calls the archu_amx_bf16_panels ukernel
  /// (lowering/ukernels_amx.c) through its extern stage `amx`.
  bool amx = false;
  /// Whether the kernel has that extern stage, so that the emitter links
  /// the AMX ukernel in.
  bool callsAmx() const { return funcs.count("amx") != 0; }
  /// A linear's epilogue over `out`, where it has one (a glu linear's
  /// gating): then the kernel's output, `out` computed in its tasks.
  Halide::Func epilogue;
  /// The kernel's output: the epilogue, else `out`. (A reference: a Func
  /// object holds its pipeline's custom lowering passes.)
  Halide::Func &output() { return epilogue.defined() ? epilogue : out; }
};

/// Whether the ukernels (lowering/ukernels.ll, whose bitcode is x86-64
/// Linux's) link into kernels for `t`: x86-64 Linux.
bool ukernelTarget(const Halide::Target &t);

/// Token rows of a packed GEMM's register tile on `t`: kTallTokenTile
/// where 32 vector registers hold its 24 accumulators (x86 with AVX-512),
/// else kTokenTile. The unblocked GEMM takes such tiles in calls of at
/// least that many rows; the K-blocked one in every call of kTokenTile
/// rows or more, and lays x out for them (x_pack).
int gemmTileRows(const Halide::Target &t);

/// Builds the algorithm of `spec` for `t`: reductions split by a divisor
/// of its natural float vector width, a K-blocked GEMM's copy of x laid
/// out for its token tiles (gemmTileRows), blocks sized for an L2 of
/// `l2Bytes`, a bf16 GEMM on AMX tiles where `amx`.
KernelFuncs lowerKernel(const KernelSpec &spec, const Halide::Target &t,
                        int64_t l2Bytes = kDefaultL2Bytes, bool amx = false);

/// Whether packed linear `d` takes its GEMM from the AMX ukernel on a
/// target with AMX tiles: a bf16 weight in pairs, 64-column panels, K a
/// multiple of 32 (a tile's), not one row only.
bool amxGemm(const LinearKernel &d);

/// The matmul of linear `d`: `d` itself, or with a glu epilogue its two
/// halves' columns, interleaved a panel at a time (gate panel q as panel
/// 2q, its up panel as 2q + 1; unpacked, the gate's N then the up's), with
/// the epilogue left out. The algorithm's `out` and its schedule are this
/// matmul's.
LinearKernel matmulOf(const LinearKernel &d);

/// Panels of each half of glu linear `d`'s packed weight (ceil(N / panel));
/// 0 without a glu epilogue over panels.
int64_t gluHalfPanels(const LinearKernel &d);

/// The weight's panel that matmul panel `v` reads: `v`, or over halves of
/// `halfPanels` panels (gluHalfPanels) the gate's panel v / 2 (v even) or
/// the up's, halfPanels + v / 2 (v odd). (lowering/ukernels_amx.c has its
/// C twin.)
Halide::Expr weightPanel(Halide::Expr v, int64_t halfPanels);

/// Applies the CPU schedule for `k` on `target`.
void scheduleKernel(KernelFuncs &k, const Halide::Target &target);

/// Where a glu epilogue computes the matmul (its panels in its tasks: the
/// epilogue's task loop `taskLoop`, `taskPanels` of the matmul's panels
/// each), and its halves' panels (weightPanel). Empty: no epilogue.
struct GluPanels {
  std::string taskLoop;
  int taskPanels = 0;
  int64_t halfPanels = 0;
};

/// Makes token tiles 1..m 2^s of each task of packed linear `d`'s GEMM
/// (`d` the matmul: matmulOf; `glu` where an epilogue's tasks compute it)
/// prefetch the next task's weight panel (m = the panel's lines / the K
/// loop's steps: K, or K / 2 for the bf16 dot product's pairs), a
/// new line every 2^s steps of K (s from the call's token tiles: the
/// lines spread over the tiles after the first), where it pays: a weight
/// of at least two panels, each at most three quarters of the L2; in a
/// K-blocked GEMM (`blockLoop`, its block loop, given), the tiles after
/// the first of each block prefetch the next block. A
/// lowering pass on the kernel's output (k.output()) finds the task loop
/// `taskLoop` (a panel per task), the block loop, the token tile loop
/// `tileLoop` and the register tile's K loop `kLoop` by their Halide
/// names and calls the archu_prefetch_read ukernel (x86-64 Linux only;
/// sets k.ukernels). A block loop given for a GEMM kBlockOf does not
/// block, or none for one it does, is the caller's error (CompileError).
void prefetchNextPanel(KernelFuncs &k, const LinearKernel &d,
                       const std::string &taskLoop,
                       const std::string &blockLoop,
                       const std::string &tileLoop, const std::string &kLoop,
                       const GluPanels &glu = {});

/// Makes the GEMV over a 16-bit weight (`kLoop` its loop over K, or over
/// the pairs of K of the bf16 dot product, by its Halide name) prefetch,
/// at each step, every line it loads kGemvAheadBytes further on in its
/// panels. On the Xeon the bf16 pairs' loop reads its 4 streams at 76-84%
/// of the rate of the same loads summed, at 83-100% with the prefetches
/// (bench/gemv-shape.c). A lowering pass on the kernel's output calls the
/// archu_prefetch_read ukernel (sets k.ukernels); a statement without the
/// loop is an error.
void prefetchGemvRows(KernelFuncs &k, const std::string &kLoop);

/// The same for input `input`'s dense loads in loop `loop`, `aheadBytes`
/// further on (prefetchGemvRows's weights; the key and value rows of
/// tiled attention's chunks). Without `mustFind`, a statement with no such
/// loads is left as it is (a chunk that reads a sparse pattern's global
/// keys by select has none dense).
void prefetchRows(KernelFuncs &k, const std::string &input,
                  const std::string &loop, int64_t aheadBytes,
                  bool mustFind);

/// Whether a call of tiled attention `a` takes its tiles (else its
/// chunks): at least block_q query rows, and more than one.
Halide::Expr takesTiles(const KernelFuncs &k, const AttentionKernel &a);

/// Lanes of tiled attention's key sums over a chunk: the schedule
/// vectorizes a chunk's keys by this many, and the algorithm rounds a
/// chunk's keys up to whole vectors of it, so that the sums add what they
/// did before the trim (masked zeros dropped: the same bits). One helper
/// for both, so they cannot drift apart.
int chunkKeyLanes(const KernelFuncs &k, const AttentionKernel &a);

/// The Halide type of a buffer's elements.
Halide::Type elementType(StoreType t);

/// The largest power of two <= `lanes` that divides `extent`.
int vectorWidthFor(int64_t extent, int lanes);

/// The largest divisor of `n` that is at most `cap` (at least 1).
int divisorUpTo(int64_t n, int cap);

/// How far ahead of its loads the GEMV over a 16-bit weight prefetches
/// each panel (prefetchGemvRows): 4 rows of a 64-column panel's pairs, 8
/// of f16 or widened bf16. In bench/gemv-shape.c on the Xeon, 1 KiB ahead
/// on every line gave the most; 512 bytes ahead, or every other line,
/// less.
constexpr int64_t kGemvAheadBytes = 1024;

/// How far ahead tiled attention's chunks (a decode's path) prefetch the
/// key rows their scores read and the value rows their sums read
/// (prefetchRows): 8 rows of one head's 64 floats. On the Xeon at 1900
/// positions (bench-156m, f32 cache, one thread), decode attention took
/// 5.1-6.4 ms a token without, 3.8-4.1 with 2 KiB, 3.7-4.0 with 4 KiB,
/// 4.2-4.7 with 1 KiB (docs/performance.md, "Decode attention's rows
/// prefetched").
constexpr int64_t kChunkAheadBytes = 2048;

/// Streams a decode chunk's key and value loops read at once: the chunk's
/// keys in parts of split_kv / kChunkStreams (rounded up, so at most this
/// many parts), one key of each part in turn. A core that walks one
/// stream of rows while it computes on them keeps too few lines in
/// flight: on the Zen 5 the loop by hand (bench/attention-loop.c) read
/// 19-20 GB/s as one stream, 23-26 as four and 24-25 as eight, against a
/// 25-32 GB/s probe; archc's kernel at 8192 positions read 1.28x faster
/// (median of five rounds), and decode attention in the model took
/// 1.15-1.34x less time over an f32 cache, 1.02-1.25x over f16
/// (docs/performance.md "Decode attention in four streams").
constexpr int kChunkStreams = 4;

/// Rows from which the GEMM over a 16-bit weight (f32 inputs) widens its
/// task's panel once into an f32 buffer that every token tile reads;
/// calls of fewer rows widen in registers, in each tile. On the Xeon the
/// buffer lost up to 2x at 4-24 rows and won from 32 (1024 -> 2816, bf16;
/// docs/performance.md). Such a GEMM's mixed token tiles (kMixedRows)
/// start there too, over the same buffer.
constexpr int kWideRows = 32;

/// The block of K a packed GEMM takes at a time when its panel (in f32)
/// outgrows three quarters of the L2 of `l2Bytes` (with 64-column panels,
/// K > 3072 on a 1 MiB L2, K > 6144 on 2 MiB), or 0: a divisor of K, at
/// most the K of an eighth of the L2 (512 on 1 MiB, 1024 on 2 MiB, at 64
/// columns) and at least 128. (The bf16 dot product's pairs: a row of K
/// is 2 bytes a column, blocked where the panel outgrows half the L2 (at
/// 64 columns K > 4096 on 1 MiB, K > 8192 on 2 MiB), blocks of at most
/// 256 pairs, at least two of them.)
int kBlockOf(const LinearKernel &d, int64_t l2Bytes);

/// Panels a packed linear's GEMV (calls of fewer than kTokenTile rows)
/// reads at once, each its own stream: 4 or 2 where they divide the panel
/// count leaving at least 4 tasks, and their columns fit `lanes` vector
/// accumulators of `lanes` floats (16 of AVX-512's 32 registers: 4
/// panels; 8 of AVX2's 16: one), else 1.
/// One stream reads at ~85% of the bandwidth several do
/// (docs/performance.md).
int gemvPanels(const LinearKernel &d, int lanes);

/// Tiled attention's register tiles are row vectors by up to this many
/// keys or value columns; the running softmax groups its value columns
/// alike, so that a group's accumulators are one tile.
constexpr int kAttentionTileColumns = 4;

} // namespace arch

#endif // ARCHC_LOWERING_ALGORITHMS_H
