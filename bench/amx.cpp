//===- amx.cpp - What Halide 14 makes of an AMX bf16 matmul ---------------===//
//
// Issue 11 asks for AMX tiles where the target has AMX and Halide 14 can
// emit them. This builds the one matmul shape Halide 14's tile extraction
// (ExtractTileOperations) accepts: out(x, y) += f32(A(k, y)) * f32(B(k % 2,
// x, k / 2)) with B in AMX's pair ("VNNI") layout, the accumulator stored in
// MemoryType::AMXTile, a tile_x x tile_y tile and the reduction split by
// tile_r, vectorized. It counts the AMX instructions in the assembly, checks
// the result against a double-precision sum, and times M x N x K calls on
// one thread. Any tile_r other than 2 (one bf16 pair: a 4-byte K slice) is
// refused by Halide 14 ("Store to AMX tile allocation of a non-tile
// value"), so each tdpbf16ps multiplies a 16 x 2 tile by a 2 x 16 one: 1/16
// of the 16 x 32 by 32 x 16 the instruction can do.
//   amx M N K TILE_X TILE_Y TILE_R ASM_PATH  ->  key=value words
//
//===----------------------------------------------------------------------===//
#include "Halide.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/syscall.h>
#include <unistd.h>

using namespace Halide;

static int count(const std::string &path, const std::string &mnemonic) {
  std::ifstream in(path);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    size_t b = line.find_first_not_of(" \t");
    if (b != std::string::npos &&
        line.compare(b, mnemonic.size(), mnemonic) == 0)
      ++n;
  }
  return n;
}

int main(int argc, char **argv) {
  if (argc != 8) {
    std::fprintf(stderr, "usage: amx M N K TILE_X TILE_Y TILE_R ASM_PATH\n");
    return 2;
  }
  const int M = std::atoi(argv[1]), N = std::atoi(argv[2]),
            K = std::atoi(argv[3]);
  const int tx = std::atoi(argv[4]), ty = std::atoi(argv[5]),
            tr = std::atoi(argv[6]);
  // Linux hands out the AMX tile state only on request
  // (ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18).
  if (syscall(SYS_arch_prctl, 0x1023, 18) != 0) {
    std::printf("refused=1\n");
    std::fprintf(stderr, "amx: the kernel refused the AMX tile state\n");
    return 0;
  }
  Var x("x"), y("y"), xi("xi"), yi("yi");
  RVar ro("ro"), ri("ri");
  ImageParam A(BFloat(16), 2, "A"), B(BFloat(16), 3, "B");
  RDom r(0, K, "r");
  Func mm("mm");
  mm(x, y) = 0.0f;
  mm(x, y) += cast<float>(A(r.x, y)) * cast<float>(B(r.x % 2, x, r.x / 2));
  mm.compute_at(mm.in(), x)
      .store_in(MemoryType::AMXTile)
      .update()
      .tile(x, y, xi, yi, tx, ty, TailStrategy::GuardWithIf)
      .split(r.x, ro, ri, tr)
      .reorder({ri, xi, yi, ro, x, y})
      .atomic()
      .vectorize(ri)
      .vectorize(xi)
      .vectorize(yi);
  mm.compute_at(mm.in(), x)
      .tile(x, y, xi, yi, tx, ty)
      .vectorize(xi)
      .vectorize(yi);
  mm.in().tile(x, y, xi, yi, tx, ty).vectorize(xi).vectorize(yi);
  Func out = mm.in();
  Target t = get_host_target().with_feature(Target::AVX512_SapphireRapids);
  try {
    out.compile_to_assembly(argv[7], {A, B}, "mm", t);
    out.compile_jit(t);
  } catch (const CompileError &e) {
    std::printf("refused=1\n");
    std::fprintf(stderr, "%s", e.what());
    return 0;
  }
  Buffer<bfloat16_t> a(K, M), b(2, N, K / 2);
  std::srand(1);
  for (int i = 0; i < M; i++)
    for (int k = 0; k < K; k++)
      a(k, i) = bfloat16_t(float(std::rand() % 256 - 128) / 64);
  for (int k = 0; k < K; k++)
    for (int j = 0; j < N; j++)
      b(k % 2, j, k / 2) = bfloat16_t(float(std::rand() % 256 - 128) / 64);
  A.set(a);
  B.set(b);
  Buffer<float> c(N, M);
  out.realize(c, t);
  double err = 0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = 0;
      for (int k = 0; k < K; k++)
        s += double(float(a(k, i))) * double(float(b(k % 2, j, k / 2)));
      err = std::max(err, std::fabs(s - c(j, i)) / std::max(1.0, std::fabs(s)));
    }
  std::vector<double> times;
  for (int rep = 0; rep < 7; rep++) {
    auto t0 = std::chrono::steady_clock::now();
    out.realize(c, t);
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count());
  }
  std::sort(times.begin(), times.end());
  std::printf(
      "refused=0 tdpbf16ps=%d tileloadd=%d max_rel_err=%.3g gflops=%.1f\n",
      count(argv[7], "tdpbf16ps"), count(argv[7], "tileloadd"), err,
      2.0 * M * N * K / times[3] / 1e9);
  return 0;
}
