//===- Algorithms.cpp - Halide algorithms of the arch ops -----------------===//
//
// Layouts (Halide lists dimensions innermost first):
//   activations  (features, tokens)      = row-major [T, N]
//   weights      (K, N)                  = PyTorch's [N, K]
//   heads        (head_dim, heads, tokens)
//   KV cache     (head_dim, kv_heads, positions) of one layer
// Feature sizes are constants; the token count and position are not.
//
//===----------------------------------------------------------------------===//
#include "lowering/Algorithms.h"

#include <algorithm>
#include <cmath>

using namespace Halide;

namespace arch {

int vectorWidthFor(int64_t extent, int lanes) {
  int v = 1;
  while (v * 2 <= lanes && extent % (v * 2) == 0)
    v *= 2;
  return v;
}

/// Fixes the static feature extents of a token-major buffer so that the
/// kernel indexes it with constants; the last dimension (tokens or
/// positions) stays dynamic but starts at 0. Its stride is fixed too when
/// `denseRows`; inputs leave it free, so that they may be views of some
/// columns of a wider tensor (the q, k and v of a fused projection).
static void constrain(OutputImageParam p, const std::vector<int64_t> &dims,
                      bool denseRows) {
  int stride = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    p.dim(i).set_bounds(0, int(dims[i])).set_stride(stride);
    stride *= int(dims[i]);
  }
  p.dim(dims.size()).set_min(0);
  if (denseRows)
    p.dim(dims.size()).set_stride(stride);
}

static ImageParam input(Type t, const std::vector<int64_t> &staticDims,
                        const char *name, KernelFuncs &k) {
  ImageParam p(t, int(staticDims.size()) + 1, name);
  constrain(p, staticDims, /*denseRows=*/false);
  k.args.push_back(p);
  return p;
}

/// x (K, T) . w (K, N) -> (N, T). The reduction over K is split into
/// `lanes`-wide partial sums (acc) so the inner loop is a vector FMA.
/// With a packed weight (panel > 0), w is (panel, K, panels) and acc keeps
/// a partial sum per output column instead, column n in panel n / panel:
/// the inner loop is a vector FMA along a panel row.
static void lowerLinear(KernelFuncs &k) {
  int64_t K = k.spec.ints[0], N = k.spec.ints[1], panel = k.spec.ints[3];
  ImageParam x = input(Float(32), {K}, "x", k);
  ImageParam w(Float(32), panel ? 3 : 2, "w");
  if (panel) {
    w.dim(0).set_bounds(0, int(panel)).set_stride(1);
    w.dim(1).set_bounds(0, int(K)).set_stride(int(panel));
    w.dim(2).set_bounds(0, int((N + panel - 1) / panel))
        .set_stride(int(K * panel));
  } else {
    w.dim(0).set_bounds(0, int(K)).set_stride(1);
    w.dim(1).set_bounds(0, int(N)).set_stride(int(K));
  }
  k.args.push_back(w);
  bool hasBias = k.spec.ints[2] != 0;
  ImageParam bias(Float(32), 1, "bias");
  if (hasBias) {
    bias.dim(0).set_bounds(0, int(N));
    k.args.push_back(bias);
  }

  Var kk("kk"), n("n"), t("t");
  Func acc("acc");
  Func out("linear");
  Expr dot;
  if (panel) {
    RDom r(0, int(K), "r");
    acc(n, t) = 0.0f;
    acc(n, t) += x(r, t) * w(n % int(panel), r, n / int(panel));
    dot = acc(n, t);
    k.rdoms["r"] = r;
    k.lanes = vectorWidthFor(panel, k.lanes);
  } else {
    int vl = vectorWidthFor(K, k.lanes);
    RDom r(0, int(K / vl), "r");
    acc(kk, n, t) = 0.0f;
    acc(kk, n, t) += x(r * vl + kk, t) * w(r * vl + kk, n);
    RDom lane(0, vl, "lane");
    dot = sum(acc(lane, n, t), "lane_sum");
    k.rdoms["r"] = r;
    k.lanes = vl;
  }
  out(n, t) = hasBias ? dot + bias(n) : dot;
  k.out = out;
  k.funcs["acc"] = acc;
  k.vars = {{"kk", kk}, {"n", n}, {"t", t}};
}

/// w (K, N) -> (panel, K, panels): column p * panel + j of row k, zero past N.
static void lowerPack(KernelFuncs &k) {
  int64_t K = k.spec.ints[0], N = k.spec.ints[1], panel = k.spec.ints[2];
  ImageParam w(Float(32), 2, "w");
  w.dim(0).set_bounds(0, int(K)).set_stride(1);
  w.dim(1).set_bounds(0, int(N)).set_stride(int(K));
  k.args.push_back(w);
  Var j("j"), kk("kk"), p("p");
  Expr col = p * int(panel) + j;
  Func out("pack");
  out(j, kk, p) = select(col < int(N), w(kk, min(col, int(N) - 1)), 0.0f);
  k.out = out;
  k.vars = {{"j", j}, {"kk", kk}, {"p", p}};
}

/// Per token and group: rms: x / sqrt(mean(x^2) + eps) * w (+ b);
/// layer: (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) * w (+ b).
/// Both reductions are split into `lanes`-wide partial sums.
static void lowerNorm(KernelFuncs &k) {
  int64_t d = k.spec.ints[0];
  bool layer = k.spec.ints[1] == 1, hasBias = k.spec.ints[2] != 0;
  // Groups with their own weight (0: one weight shared by all groups).
  int separate = int(k.spec.ints[3]);
  int64_t groups = k.spec.ints[4];
  float eps = float(k.spec.reals[0]);
  int vl = vectorWidthFor(d, k.lanes);
  ImageParam x = input(Float(32), {d, groups}, "x", k);
  int wdims = separate ? 2 : 1;
  ImageParam w(Float(32), wdims, "w"), bias(Float(32), wdims, "bias");
  for (ImageParam *p : {&w, &bias}) {
    p->dim(0).set_bounds(0, int(d)).set_stride(1);
    if (separate)
      p->dim(1).set_bounds(0, separate).set_stride(int(d));
  }
  k.args.push_back(w);
  if (hasBias)
    k.args.push_back(bias);

  Var i("i"), g("g"), t("t"), kk("kk");
  RDom r(0, int(d / vl), "r");
  RDom lane(0, vl, "lane");
  Func mean("mean");
  if (layer) {
    Func s1("sum_lanes");
    s1(kk, g, t) = 0.0f;
    s1(kk, g, t) += x(r * vl + kk, g, t);
    mean(g, t) = sum(s1(lane, g, t)) / float(d);
    k.funcs["s1"] = s1;
  } else {
    mean(g, t) = 0.0f;
  }
  Func centered("centered");
  centered(i, g, t) = x(i, g, t) - mean(g, t);
  Func sq("sumsq_lanes");
  sq(kk, g, t) = 0.0f;
  sq(kk, g, t) += centered(r * vl + kk, g, t) * centered(r * vl + kk, g, t);
  Func inv("inv_std");
  inv(g, t) = 1.0f / sqrt(sum(sq(lane, g, t)) / float(d) + eps);
  Func out(layer ? "layernorm" : "rmsnorm");
  float offset = float(k.spec.reals[1]);
  Expr wi = separate ? w(i, g) : w(i);
  Expr scaleBy = offset == 0.0f ? wi : wi + offset;
  Expr y = centered(i, g, t) * inv(g, t) * scaleBy;
  out(i, g, t) = hasBias ? y + (separate ? bias(i, g) : bias(i)) : y;
  k.out = out;
  k.funcs["sq"] = sq;
  k.funcs["inv"] = inv;
  k.funcs["mean"] = mean;
  k.vars = {{"i", i}, {"g", g}, {"t", t}, {"kk", kk}};
  k.lanes = vl;
}

static void lowerEmbed(KernelFuncs &k) {
  int64_t vocab = k.spec.ints[0], d = k.spec.ints[1];
  float scale = float(k.spec.reals[0]);
  ImageParam tokens(Int(32), 1, "tokens");
  tokens.dim(0).set_min(0);
  k.args.push_back(tokens);
  ImageParam table(Float(32), 2, "table");
  table.dim(0).set_bounds(0, int(d)).set_stride(1);
  table.dim(1).set_bounds(0, int(vocab)).set_stride(int(d));
  k.args.push_back(table);
  Var i("i"), t("t");
  Func out("embed");
  // The runtime rejects out-of-range tokens; the clamp keeps reads in bounds.
  Expr row = clamp(tokens(t), 0, int(vocab) - 1);
  out(i, t) = scale == 1.0f ? table(i, row) : table(i, row) * scale;
  k.out = out;
  k.vars = {{"i", i}, {"t", t}};
  k.lanes = vectorWidthFor(d, k.lanes);
}

/// The rotary frequencies of pairs 0 .. rot/2 - 1, after context-extension
/// scaling (arch::RopeScaling by value), and the factor on cos and sin.
static std::vector<double> ropeFrequencies(const KernelSpec &spec,
                                           double &mscale) {
  int64_t rot = spec.ints[2], scaling = spec.ints[4];
  double orig = double(spec.ints[5]);
  double theta = spec.reals[0], factor = spec.reals[1];
  double low = spec.reals[2], high = spec.reals[3];
  double betaFast = spec.reals[4], betaSlow = spec.reals[5];
  if (scaling == 2) // NTK-aware: a larger base
    theta *= std::pow(factor, double(rot) / double(rot - 2));
  std::vector<double> freq;
  for (int64_t p = 0; p < rot / 2; ++p)
    freq.push_back(std::pow(theta, -2.0 * double(p) / double(rot)));
  mscale = 1.0;
  switch (scaling) {
  case 1: // linear: positions / factor
    for (double &f : freq)
      f /= factor;
    break;
  case 3: { // YaRN
    // The pair index whose wavelength fits `turns` rotations in `orig`.
    auto dimFor = [&](double turns) {
      return double(rot) * std::log(orig / (turns * 2 * M_PI)) /
             (2 * std::log(theta));
    };
    double lo = std::max(0.0, std::floor(dimFor(betaFast)));
    double hi = std::min(double(rot - 1), std::ceil(dimFor(betaSlow)));
    if (lo == hi)
      hi += 0.001;
    for (size_t p = 0; p < freq.size(); ++p) {
      double ramp = std::clamp((double(p) - lo) / (hi - lo), 0.0, 1.0);
      double extrapolate = 1.0 - ramp;
      freq[p] = freq[p] / factor * (1 - extrapolate) + freq[p] * extrapolate;
    }
    if (factor > 1)
      mscale = 0.1 * std::log(factor) + 1.0;
    break;
  }
  case 4: { // Llama 3.1
    double lowWavelen = orig / low, highWavelen = orig / high;
    for (double &f : freq) {
      double wavelen = 2 * M_PI / f;
      if (wavelen > lowWavelen) {
        f /= factor;
      } else if (wavelen >= highWavelen) {
        double smooth = (orig / wavelen - low) / (high - low);
        f = (1 - smooth) * f / factor + smooth * f;
      }
    }
    break;
  }
  default:
    break;
  }
  return freq;
}

/// Rotates pairs of dimensions of each head by (pos + t) * freq(p).
static void lowerRope(KernelFuncs &k) {
  int64_t heads = k.spec.ints[0], hd = k.spec.ints[1], rot = k.spec.ints[2];
  bool interleaved = k.spec.ints[3] == 1;
  ImageParam x = input(Float(32), {hd, heads}, "x", k);
  Param<int32_t> pos("pos");
  k.args.push_back(pos);

  Var j("j"), h("h"), t("t"), p("p");
  int half = int(rot / 2);
  double mscale;
  std::vector<double> freqs = ropeFrequencies(k.spec, mscale);
  Buffer<float> table(half, "inv_freq_table");
  for (int i = 0; i < half; ++i)
    table(i) = float(freqs[size_t(i)]);
  Func freq("inv_freq");
  freq(p) = table(p);
  Func angle("angle");
  angle(p, t) = cast<float>(pos + t) * freq(p);
  Func cosv("cos_table"), sinv("sin_table");
  cosv(p, t) = float(mscale) * cos(angle(p, t));
  sinv(p, t) = float(mscale) * sin(angle(p, t));

  // Pair index, partner element and the sign of its term for element j.
  Expr pair, partner, sign;
  if (interleaved) {
    Expr even = j % 2 == 0;
    pair = j / 2;
    partner = select(even, x(min(j + 1, int(hd) - 1), h, t),
                     x(max(j - 1, 0), h, t));
    sign = select(even, -1.0f, 1.0f);
  } else {
    Expr first = j < half;
    pair = select(first, j, j - half);
    partner = select(first, x(min(j + half, int(hd) - 1), h, t),
                     x(max(j - half, 0), h, t));
    sign = select(first, -1.0f, 1.0f);
  }
  pair = clamp(pair, 0, half - 1);
  Expr rotated = x(j, h, t) * cosv(pair, t) + sign * partner * sinv(pair, t);
  Func out("rope");
  out(j, h, t) = select(j < int(rot), rotated, x(j, h, t));
  k.out = out;
  k.funcs = {{"freq", freq}, {"cos", cosv}, {"sin", sinv}, {"angle", angle}};
  k.vars = {{"j", j}, {"h", h}, {"t", t}, {"p", p}};
  k.lanes = vectorWidthFor(hd, k.lanes);
}

/// ALiBi slopes (Press et al. 2022): a geometric sequence from 2^(-8/n)
/// for n a power of two; otherwise the slopes of the nearest lower power of
/// two, then every other slope of the next one up.
static std::vector<double> alibiSlopes(int n) {
  auto pow2 = [](int m) {
    std::vector<double> s;
    double start = std::pow(2.0, -8.0 / m);
    for (int i = 0; i < m; ++i)
      s.push_back(std::pow(start, i + 1));
    return s;
  };
  int m = 1;
  while (m * 2 <= n)
    m *= 2;
  std::vector<double> s = pow2(m);
  std::vector<double> extra = pow2(2 * m);
  for (int i = 0; int(s.size()) < n; i += 2)
    s.push_back(extra[size_t(i)]);
  return s;
}

/// Causal T5 buckets (Raffel et al. 2020) of distances 0 .. max_distance:
/// half the buckets hold distances exactly, the rest grow logarithmically
/// up to max_distance.
static std::vector<int> t5Buckets(int64_t buckets, int64_t maxDistance) {
  std::vector<int> out;
  int64_t exact = buckets / 2;
  for (int64_t n = 0; n <= maxDistance; ++n) {
    if (n < exact) {
      out.push_back(int(n));
      continue;
    }
    double large = double(exact) + std::log(double(n) / double(exact)) /
                                       std::log(double(maxDistance) /
                                                double(exact)) *
                                       double(buckets - exact);
    out.push_back(int(std::min<int64_t>(int64_t(large), buckets - 1)));
  }
  return out;
}

/// Causal attention of query rows t over cache positions 0 .. pos + t, with
/// query head h reading KV head h / (n_heads / n_kv_heads).
static void lowerAttention(KernelFuncs &k) {
  int64_t heads = k.spec.ints[0], kvHeads = k.spec.ints[1],
          hd = k.spec.ints[2];
  float scale = float(k.spec.reals[0]);
  int group = int(heads / kvHeads);
  ImageParam q = input(Float(32), {hd, heads}, "q", k);
  ImageParam kc = input(Float(32), {hd, kvHeads}, "k_cache", k);
  ImageParam vc = input(Float(32), {hd, kvHeads}, "v_cache", k);
  int64_t buckets = k.spec.ints[5], maxDistance = k.spec.ints[6];
  ImageParam relBias(Float(32), 2, "rel_bias");
  if (buckets) {
    relBias.dim(0).set_bounds(0, int(heads)).set_stride(1);
    relBias.dim(1).set_bounds(0, int(buckets)).set_stride(int(heads));
    k.args.push_back(relBias);
  }
  int64_t clip = k.spec.ints[7];
  ImageParam relKey(Float(32), 2, "rel_key"), relValue(Float(32), 2, "rel_value");
  if (clip) {
    for (ImageParam *rel : {&relKey, &relValue}) {
      rel->dim(0).set_bounds(0, int(hd)).set_stride(1);
      rel->dim(1).set_bounds(0, int(2 * clip + 1)).set_stride(int(hd));
      k.args.push_back(*rel);
    }
  }
  Param<int32_t> pos("pos");
  k.args.push_back(pos);

  Var j("j"), h("h"), t("t"), dd("dd");
  // Shaw: the table row of key position j for query row t.
  auto relRow = [&](Expr key) {
    return clamp(key - (pos + t), -int(clip), int(clip)) + int(clip);
  };
  Expr len = pos + q.dim(2).extent();
  RDom rd(0, int(hd), "rd");
  Func score("score");
  score(j, h, t) = 0.0f;
  Expr key = kc(rd, h / group, j);
  if (clip)
    key += relKey(rd, relRow(j));
  score(j, h, t) += q(rd, h, t) * key;
  Func scaled("scaled_score");
  Expr sc = score(j, h, t) * scale;
  float cap = float(k.spec.reals[1]);
  if (cap > 0)
    sc = cap * tanh(sc / cap);
  if (k.spec.ints[3]) {
    // ALiBi: a fixed per-head slope times the query-key distance.
    std::vector<double> slopes = alibiSlopes(int(heads));
    Buffer<float> slope(int(heads), "alibi_slope");
    for (int i = 0; i < int(heads); ++i)
      slope(i) = float(slopes[size_t(i)]);
    sc -= slope(h) * cast<float>(pos + t - j);
  }
  if (buckets) {
    // T5's bucket of each query-key distance up to max_distance (beyond it
    // the last bucket), computed once at compile time.
    std::vector<int> table = t5Buckets(buckets, maxDistance);
    Buffer<int32_t> bucketOf(int(table.size()), "t5_bucket");
    for (size_t i = 0; i < table.size(); ++i)
      bucketOf(int(i)) = table[i];
    Expr dist = clamp(pos + t - j, 0, int(maxDistance));
    sc += relBias(h, clamp(bucketOf(dist), 0, int(buckets) - 1));
  }
  scaled(j, h, t) = sc;

  RDom past(0, len, "past");
  past.where(past <= pos + t);
  if (int64_t window = k.spec.ints[4]) // the last `window` positions only
    past.where(past > pos + t - int(window));
  Func rowMax("row_max");
  rowMax(h, t) = Float(32).min();
  rowMax(h, t) = max(rowMax(h, t), scaled(past, h, t));
  Func prob("prob");
  prob(j, h, t) = exp(scaled(j, h, t) - rowMax(h, t));
  Func rowSum("row_sum");
  rowSum(h, t) = 0.0f;
  rowSum(h, t) += prob(past, h, t);
  Func pv("pv");
  pv(dd, h, t) = 0.0f;
  Expr value = vc(dd, h / group, past);
  if (clip)
    value += relValue(dd, relRow(past));
  pv(dd, h, t) += prob(past, h, t) * value;
  Func out("attention");
  out(dd, h, t) = pv(dd, h, t) / rowSum(h, t);
  k.out = out;
  k.funcs = {{"score", score}, {"row_max", rowMax}, {"prob", prob},
             {"row_sum", rowSum}, {"pv", pv}};
  k.vars = {{"j", j}, {"h", h}, {"t", t}, {"dd", dd}};
  k.rdoms = {{"rd", rd}, {"past", past}};
  k.lanes = vectorWidthFor(hd, k.lanes);
}

/// arch::Activation by its integer value (see ArchAttrs.td).
static Expr activate(Expr x, int64_t act) {
  switch (act) {
  case 0: return x / (1.0f + exp(-x));                             // silu
  case 1: return 0.5f * x * (1.0f + erf(x * float(M_SQRT1_2)));    // gelu
  case 2: {                                                        // gelu_tanh
    Expr inner = float(std::sqrt(2.0 / M_PI)) * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanh(inner));
  }
  case 3: return x / (1.0f + exp(-1.702f * x));                    // gelu_sigmoid
  case 4: return max(x, 0.0f);                                     // relu
  case 5: {                                                        // squared_relu
    Expr r = max(x, 0.0f);
    return r * r;
  }
  case 6: return 1.0f / (1.0f + exp(-x));                          // sigmoid
  default: return x;                                               // identity
  }
}

/// add: a + b; glu: act(a) * b; activation: act(a); copy: a.
static void lowerElementwise(KernelFuncs &k) {
  int64_t d = k.spec.ints[0];
  ImageParam a = input(Float(32), {d}, "a", k);
  Var i("i"), t("t");
  Func out(kindName(k.spec.kind));
  if (k.spec.kind == KernelKind::Copy) {
    out(i, t) = a(i, t);
  } else if (k.spec.kind == KernelKind::Activation) {
    out(i, t) = activate(a(i, t), k.spec.ints[1]);
  } else if (k.spec.kind == KernelKind::Scale) {
    out(i, t) = a(i, t) * float(k.spec.reals[0]);
  } else if (k.spec.kind == KernelKind::Softcap) {
    float cap = float(k.spec.reals[0]);
    out(i, t) = cap * tanh(a(i, t) / cap);
  } else {
    ImageParam b = input(Float(32), {d}, "b", k);
    if (k.spec.kind == KernelKind::Add)
      out(i, t) = a(i, t) + b(i, t);
    else
      out(i, t) = activate(a(i, t), k.spec.ints[1]) * b(i, t);
  }
  k.out = out;
  k.vars = {{"i", i}, {"t", t}};
  k.lanes = vectorWidthFor(d, k.lanes);
}

/// x plus the embedding of position pos + t: a table row (learned) or
/// sin / cos of (pos + t) / 10000^(2i/d) in dimensions 2i / 2i + 1.
static void lowerPosEmbed(KernelFuncs &k) {
  int64_t d = k.spec.ints[0], rows = k.spec.ints[3];
  bool learned = k.spec.ints[1] == 0;
  int offset = int(k.spec.ints[2]);
  ImageParam x = input(Float(32), {d}, "x", k);
  ImageParam table(Float(32), 2, "table");
  if (learned) {
    table.dim(0).set_bounds(0, int(d)).set_stride(1);
    table.dim(1).set_bounds(0, int(rows)).set_stride(int(d));
    k.args.push_back(table);
  }
  Param<int32_t> pos("pos");
  k.args.push_back(pos);
  Var i("i"), t("t");
  Expr p = pos + t;
  Expr e;
  if (learned) {
    // The runtime keeps positions below max_seq_len; the clamp keeps
    // reads in bounds all the same.
    e = table(i, clamp(p + offset, 0, int(rows) - 1));
  } else {
    Expr pair = cast<float>(i / 2 * 2);
    Expr angle = cast<float>(p) * exp(-pair / float(d) * float(std::log(10000.0)));
    e = select(i % 2 == 0, sin(angle), cos(angle));
  }
  Func out("pos_embed");
  out(i, t) = x(i, t) + e;
  k.out = out;
  k.vars = {{"i", i}, {"t", t}};
  k.lanes = vectorWidthFor(d, k.lanes);
}

KernelFuncs lowerKernel(const KernelSpec &spec, int lanes) {
  KernelFuncs k;
  k.spec = spec;
  k.lanes = lanes;
  switch (spec.kind) {
  case KernelKind::LinearGemm:
  case KernelKind::LinearGemv:
    lowerLinear(k);
    break;
  case KernelKind::Pack:
    lowerPack(k);
    break;
  case KernelKind::Norm:
    lowerNorm(k);
    break;
  case KernelKind::PosEmbed:
    lowerPosEmbed(k);
    break;
  case KernelKind::Embed:
    lowerEmbed(k);
    break;
  case KernelKind::Rope:
    lowerRope(k);
    break;
  case KernelKind::Attention:
    lowerAttention(k);
    break;
  case KernelKind::Activation:
  case KernelKind::Softcap:
  case KernelKind::Scale:
  case KernelKind::Glu:
  case KernelKind::Add:
  case KernelKind::Copy:
    lowerElementwise(k);
    break;
  }
  // Every output is token-major with static feature extents, its rows
  // dense but for a copy's.
  std::vector<int64_t> outDims;
  switch (spec.kind) {
  case KernelKind::LinearGemm:
  case KernelKind::LinearGemv: outDims = {spec.ints[1]}; break;
  case KernelKind::Embed: outDims = {spec.ints[1]}; break;
  case KernelKind::Rope: outDims = {spec.ints[1], spec.ints[0]}; break;
  case KernelKind::Attention: outDims = {spec.ints[2], spec.ints[0]}; break;
  case KernelKind::Norm: outDims = {spec.ints[0], spec.ints[4]}; break;
  case KernelKind::Pack: outDims = {spec.ints[2], spec.ints[0]}; break;
  default: outDims = {spec.ints[0]}; break;
  }
  // A copy writes into a view: some columns of a wider array.
  constrain(k.out.output_buffer(), outDims,
            /*denseRows=*/spec.kind != KernelKind::Copy);
  return k;
}

} // namespace arch
