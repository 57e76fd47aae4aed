// The training runtime's data sources, schedule and checkpoint file, against
// hand-derived expectations: token windows are contiguous runs of the file
// with labels shifted by one, seeded and reproducible; shuffled epochs are
// permutations; padding is ignored labels; learning rates at known points.
#include "../../runtime/Backend.h"
#include "../../runtime/Checkpoint.h"
#include "../../runtime/Data.h"
#include "../../runtime/NamePattern.h"
#include "../../runtime/Schedule.h"
#include "otc/kernels/adamw8bit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

using namespace otc;

namespace {

/// A scratch folder, removed with its files.
struct Scratch {
  std::string dir;
  Scratch() {
    char name[] = "/tmp/otc-runtime-test-XXXXXX";
    dir = mkdtemp(name);
  }
  ~Scratch() { std::system(("rm -rf '" + dir + "'").c_str()); }
  std::string write(const std::string &name, const std::string &bytes) const {
    std::string path = dir + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
};

std::string bytesOf(const void *p, size_t n) { return std::string(static_cast<const char *>(p), n); }

/// A program with two [N, T] int64 inputs (tokens, targets), targets
/// labels of `vocab` classes with ignore_index -100.
struct TwoInputs {
  otc_tensor_desc in[2];
  otc_program prog{};
  TwoInputs(int64_t n, int64_t t, int64_t vocab) {
    for (int i = 0; i < 2; ++i) {
      in[i] = otc_tensor_desc{};
      in[i].name = i ? "targets" : "tokens";
      in[i].dtype = OTC_I64;
      in[i].rank = 2;
      in[i].shape[0] = n, in[i].shape[1] = t;
      in[i].num_classes = vocab;
    }
    in[1].has_ignore_index = 1, in[1].ignore_index = -100;
    prog.micro_batch = n;
    prog.num_inputs = 2;
    prog.inputs = in;
    prog.token_labels = 1;
  }
};

TrainOptions tokenOptions(const std::string &file, uint64_t seed) {
  TrainOptions o;
  o.tokens = file, o.tokenInput = "tokens", o.tokenLabels = "targets", o.seed = seed;
  return o;
}

const int64_t *row(const HostBatch &b, int input, int64_t r, int64_t t) {
  return reinterpret_cast<const int64_t *>(b.inputs[size_t(input)].data()) + r * t;
}

TEST(TokenStream, WindowsAreShiftedRunsOfTheFile) {
  Scratch s;
  std::vector<uint16_t> tokens(1000);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = uint16_t(i); // a token names its position
  std::string file = s.write("t.bin", bytesOf(tokens.data(), tokens.size() * 2));
  TwoInputs p(4, 8, 1000);
  auto src = openTokens(tokenOptions(file, 3), p.prog);
  EXPECT_EQ(src->samples(), 1000);
  std::set<int64_t> starts;
  for (int64_t index = 0; index < 50; ++index) {
    HostBatch b;
    src->fill(index, b);
    EXPECT_EQ(b.counted, 4 * 8);
    for (int64_t r = 0; r < 4; ++r) {
      const int64_t *x = row(b, 0, r, 8), *y = row(b, 1, r, 8);
      int64_t start = x[0];
      ASSERT_LE(start + 9, 1000);
      for (int64_t j = 0; j < 8; ++j) {
        EXPECT_EQ(x[j], start + j) << "micro-batch " << index << " row " << r;
        EXPECT_EQ(y[j], start + j + 1) << "micro-batch " << index << " row " << r;
      }
      starts.insert(start);
    }
  }
  // 200 draws from 992 starts: nearly all distinct (a constant start fails).
  EXPECT_GT(starts.size(), 150u);
  // The same seed gives the same windows; another seed others.
  HostBatch a, again, other;
  openTokens(tokenOptions(file, 3), p.prog)->fill(7, a);
  src->fill(7, again);
  openTokens(tokenOptions(file, 4), p.prog)->fill(7, other);
  EXPECT_EQ(a.inputs, again.inputs);
  EXPECT_NE(a.inputs, other.inputs);
}

TEST(TokenStream, ReadsLlmcAndNpyFiles) {
  Scratch s;
  std::vector<int32_t> header(256, 0);
  header[0] = 20240520, header[1] = 1, header[2] = 20;
  std::vector<uint16_t> body(20);
  for (int i = 0; i < 20; ++i)
    body[size_t(i)] = uint16_t(i);
  std::string llmc = s.write("t.bin", bytesOf(header.data(), 1024) + bytesOf(body.data(), 40));
  TwoInputs p(1, 4, 20);
  HostBatch b;
  openTokens(tokenOptions(llmc, 0), p.prog)->fill(0, b);
  const int64_t *x = row(b, 0, 0, 4), *y = row(b, 1, 0, 4);
  for (int j = 0; j < 4; ++j) {
    EXPECT_EQ(x[j], x[0] + j);
    EXPECT_EQ(y[j], x[j] + 1);
  }
  // An int32 .npy.
  std::string head = "{'descr': '<i4', 'fortran_order': False, 'shape': (20,), }";
  head.resize(117, ' ');
  head += '\n';
  std::string npy = std::string("\x93NUMPY\x01\x00", 8) + char(head.size()) + char(0) + head;
  std::vector<int32_t> ids(20);
  for (int i = 0; i < 20; ++i)
    ids[size_t(i)] = 19 - i;
  std::string path = s.write("t.npy", npy + bytesOf(ids.data(), 80));
  openTokens(tokenOptions(path, 0), p.prog)->fill(0, b);
  x = row(b, 0, 0, 4), y = row(b, 1, 0, 4);
  for (int j = 0; j < 4; ++j)
    EXPECT_EQ(y[j], x[j] - 1);
}

TEST(TokenStream, RefusesBadTokensAndShortFiles) {
  Scratch s;
  std::vector<uint16_t> tokens(100, 1);
  tokens[50] = 60000;
  std::string file = s.write("t.bin", bytesOf(tokens.data(), 200));
  TwoInputs p(8, 60, 50); // windows of 61 of 100 tokens: every one holds position 50
  auto src = openTokens(tokenOptions(file, 1), p.prog);
  HostBatch b;
  try {
    src->fill(0, b);
    FAIL() << "token 60000 was accepted";
  } catch (const Fatal &f) {
    EXPECT_NE(f.message.find("holds token 60000 at position 50"), std::string::npos) << f.message;
  }
  TwoInputs wide(1, 100, 50);
  try {
    openTokens(tokenOptions(file, 1), wide.prog);
    FAIL() << "a file shorter than a window was accepted";
  } catch (const Fatal &f) {
    EXPECT_NE(f.message.find("fewer than one window of 101"), std::string::npos) << f.message;
  }
}

/// An .npy file of int64 values.
std::string npyInt64(const std::vector<int64_t> &v, const std::vector<int64_t> &shape) {
  std::string dims;
  for (int64_t d : shape)
    dims += std::to_string(d) + ",";
  std::string head = "{'descr': '<i8', 'fortran_order': False, 'shape': (" + dims + "), }";
  head.resize(117, ' ');
  head += '\n';
  return std::string("\x93NUMPY\x01\x00", 8) + char(head.size()) + char(0) + head +
         bytesOf(v.data(), v.size() * 8);
}

TEST(Arrays, ShuffledEpochsArePermutations) {
  Scratch s;
  std::vector<int64_t> ids(12), labels(12);
  for (int i = 0; i < 12; ++i)
    ids[size_t(i)] = i, labels[size_t(i)] = i % 3;
  s.write("tokens.npy", npyInt64(ids, {12, 1}));
  s.write("targets.npy", npyInt64(labels, {12, 1}));
  TwoInputs p(3, 1, 12);
  InputSet set = trainingInputs(p.prog);
  auto a = openArrays(s.dir, set, true, 9), b = openArrays(s.dir, set, true, 9);
  ASSERT_EQ(a->microBatchesPerEpoch(), 4);
  std::vector<std::vector<int64_t>> orders;
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> order;
    for (int j = 0; j < 4; ++j) {
      HostBatch x, y;
      a->fill(epoch * 4 + j, x);
      b->fill(epoch * 4 + j, y);
      EXPECT_EQ(x.inputs, y.inputs); // the same seed, the same order
      for (int r = 0; r < 3; ++r) {
        int64_t id = row(x, 0, r, 1)[0];
        EXPECT_EQ(row(x, 1, r, 1)[0], id % 3); // rows stay whole across inputs
        order.push_back(id);
      }
    }
    std::set<int64_t> seen(order.begin(), order.end());
    EXPECT_EQ(seen.size(), 12u) << "epoch " << epoch << " is not a permutation";
    orders.push_back(order);
  }
  EXPECT_NE(orders[0], orders[1]);
  EXPECT_NE(orders[1], orders[2]);
}

TEST(Arrays, PartialLastBatchIsPaddedWithIgnoredLabels) {
  Scratch s;
  std::vector<int64_t> ids = {5, 6, 7, 8, 9}, labels = {1, 2, 3, 4, 0};
  s.write("tokens.npy", npyInt64(ids, {5, 1}));
  s.write("targets.npy", npyInt64(labels, {5, 1}));
  TwoInputs p(4, 1, 10);
  InputSet set = trainingInputs(p.prog);
  set.padWithIgnored = true;
  auto a = openArrays(s.dir, set, false, 0);
  ASSERT_EQ(a->microBatchesPerEpoch(), 2);
  HostBatch last;
  a->fill(1, last);
  EXPECT_EQ(last.counted, 1);
  EXPECT_EQ(row(last, 0, 0, 1)[0], 9);
  EXPECT_EQ(row(last, 1, 0, 1)[0], 0);
  for (int r = 1; r < 4; ++r)
    EXPECT_EQ(row(last, 1, r, 1)[0], -100);
}

TEST(Schedule, HandDerivedRates) {
  TrainOptions o;
  o.lr = 1.0, o.minLr = 0.1, o.warmupSteps = 10;
  o.schedule = LrSchedule::Cosine;
  EXPECT_DOUBLE_EQ(learningRate(o, 0, 110), 0.0);  // warmup starts at 0, as HF's
  EXPECT_DOUBLE_EQ(learningRate(o, 5, 110), 0.5);
  EXPECT_DOUBLE_EQ(learningRate(o, 10, 110), 1.0); // the peak
  EXPECT_NEAR(learningRate(o, 60, 110), 0.55, 1e-15); // half way: (1 + 0.1) / 2
  EXPECT_NEAR(learningRate(o, 110, 110), 0.1, 1e-15);
  o.schedule = LrSchedule::Linear;
  EXPECT_NEAR(learningRate(o, 35, 110), 0.1 + 0.9 * 0.75, 1e-15);
  o.schedule = LrSchedule::Constant;
  EXPECT_DOUBLE_EQ(learningRate(o, 100, 110), 1.0);
}

TEST(Checkpoint, RoundTripsAndRefusesDamage) {
  Scratch s;
  Checkpoint c;
  c.config["lr"] = "0.5";
  c.nextStep = 7, c.updates = 6, c.skipped = 1, c.scale = 32768, c.goodSteps = 3;
  c.hysteresisLeft = 2, c.firstLoss = 2.25;
  c.tensors["value/w"] = {1.5f, -2.0f, NAN};
  c.tensors["m/w"] = {0.25f, 0, 0};
  saveCheckpoint(s.dir + "/ck", c);
  Checkpoint r = loadCheckpoint(s.dir + "/ck");
  EXPECT_EQ(r.config, c.config);
  EXPECT_EQ(r.nextStep, 7);
  EXPECT_EQ(r.updates, 6);
  EXPECT_EQ(r.skipped, 1);
  EXPECT_EQ(r.scale, 32768.0f);
  EXPECT_EQ(r.goodSteps, 3);
  EXPECT_EQ(r.hysteresisLeft, 2);
  EXPECT_EQ(r.firstLoss, 2.25);
  ASSERT_EQ(r.tensors.size(), 2u);
  EXPECT_EQ(r.tensors["value/w"][1], -2.0f);
  EXPECT_TRUE(std::isnan(r.tensors["value/w"][2]));
  // One byte short, or cut in its header: refused.
  std::string file = checkpointFile(s.dir + "/ck");
  std::ifstream in(file, std::ios::binary | std::ios::ate);
  long long size = (long long)in.tellg();
  ASSERT_EQ(truncate(file.c_str(), size - 1), 0);
  EXPECT_THROW(loadCheckpoint(s.dir + "/ck"), Fatal);
  ASSERT_EQ(truncate(file.c_str(), 20), 0);
  EXPECT_THROW(loadCheckpoint(s.dir + "/ck"), Fatal);
}

TEST(DynamicMap, IsBitsandbytesDynamicTree) {
  // bitsandbytes' create_dynamic_map: 7 decades 10^-6 .. 10^0, 2^i (signed)
  // or 2^(i+1) (unsigned) midpoints of linspace(0.1, 1) per decade i, mirrored
  // when signed, plus 0 and 1. Checked here in double against the table.
  for (bool sign : {true, false}) {
    std::vector<double> want;
    for (int i = 0; i < 7; ++i) {
      int items = sign ? (1 << i) + 1 : (1 << (i + 1)) + 1;
      for (int k = 0; k + 1 < items; ++k) {
        double a = 0.1 + 0.9 * k / (items - 1), b = 0.1 + 0.9 * (k + 1) / (items - 1);
        want.push_back(std::pow(10.0, i - 6) * (a + b) / 2);
        if (sign)
          want.push_back(-want.back());
      }
    }
    want.push_back(0), want.push_back(1);
    std::sort(want.begin(), want.end());
    ASSERT_EQ(want.size(), 256u);
    const float *code = sign ? kDynamicMapSigned : kDynamicMapUnsigned;
    for (int k = 0; k < 256; ++k) {
      // The table is float32 arithmetic (torch's linspace, the midpoint and
      // the scaling): up to four roundings of 2^-24 from the exact value.
      EXPECT_NEAR(code[k], want[size_t(k)], 4 * 0x1p-24 * std::fabs(want[size_t(k)])) << k;
      if (k)
        EXPECT_LT(code[k - 1], code[k]);
    }
  }
}

/// A float64 model of block-wise dynamic quantisation: absmax of the block,
/// and for each value the code nearest to x / absmax by exhaustive search.
TEST(DynamicMap, BlockQuantisationMatchesFloat64Model) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  for (bool sign : {true, false}) {
    const float *code = sign ? kDynamicMapSigned : kDynamicMapUnsigned;
    for (int trial = 0; trial < 20; ++trial) {
      // Values across seven decades, as Adam's moments spread.
      std::vector<float> x(kQuantBlock);
      for (float &v : x) {
        double mag = std::pow(10.0, -7.0 * std::uniform_real_distribution<double>(0, 1)(rng));
        v = float(mag * (sign ? (normal(rng) < 0 ? -1 : 1) : 1));
      }
      std::vector<uint8_t> q(x.size());
      float absmax = quantizeBlock(code, x.data(), int64_t(x.size()), q.data());
      double want = 0;
      for (float v : x)
        want = std::max(want, std::fabs(double(v)));
      ASSERT_EQ(double(absmax), want);
      for (size_t i = 0; i < x.size(); ++i) {
        double t = double(x[i]) / want;
        int best = 0;
        for (int k = 1; k < 256; ++k)
          if (std::fabs(t - code[k]) < std::fabs(t - code[best]))
            best = k;
        if (q[i] != best) {
          // Only a value on a midpoint (to float rounding of x / absmax) may differ.
          double gap = std::fabs(std::fabs(t - code[q[i]]) - std::fabs(t - code[best]));
          EXPECT_LT(gap, 1e-6 * std::fabs(t) + 1e-12) << "value " << x[i] << " code " << int(q[i])
                                                      << " vs " << best;
        }
        // The round trip: within half the gap to the neighbouring code.
        double back = double(code[q[i]]) * absmax;
        double half = 0.5 * (q[i] < 255 ? code[q[i] + 1] - code[q[i]] : code[q[i]] - code[q[i] - 1]);
        double halfBelow = 0.5 * (q[i] > 0 ? code[q[i]] - code[q[i] - 1] : half);
        EXPECT_LE(std::fabs(back - x[i]), std::max(half, halfBelow) * want * (1 + 1e-6) + 1e-30);
      }
    }
  }
  // A block of zeros keeps scale 0 and the code of 0.
  std::vector<float> zeros(10, 0.0f);
  std::vector<uint8_t> q(10);
  EXPECT_EQ(quantizeBlock(kDynamicMapSigned, zeros.data(), 10, q.data()), 0.0f);
  EXPECT_EQ(kDynamicMapSigned[q[0]], 0.0f);
}

/// From zero moments, an 8-bit step moves the parameter exactly as float32
/// AdamW (the new moments drive it before they are rounded), and stores
/// moments that dequantise to AdamW's within the map's resolution.
TEST(AdamW8bit, FirstStepIsAdamWAndStoresItsMoments) {
  const int64_t n = 5000; // three blocks, the last partial
  std::vector<float> p(n), g(n), p32(n), m32(n, 0), v32(n, 0);
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal;
  for (int64_t i = 0; i < n; ++i)
    p[i] = p32[i] = normal(rng), g[i] = normal(rng) * std::pow(10.0f, float(i % 5) - 4);
  OptimizerStep s{};
  s.kind = OTC_ADAMW8BIT;
  s.lr = 1e-3f, s.beta1 = 0.9f, s.oneMinusBeta1 = 0.1f, s.beta2 = 0.999f, s.oneMinusBeta2 = 0.001f;
  s.eps = 1e-8f, s.stepSize = float(1e-3 / 0.1), s.biasCorr2Sqrt = float(std::sqrt(0.001));
  s.decayFactor = float(1 - 1e-3 * 0.01), s.gradScale = 1, s.firstStep = true;
  std::vector<uint8_t> q1(n, nearestCode(kDynamicMapSigned, 0)), q2(n, nearestCode(kDynamicMapUnsigned, 0));
  std::vector<float> a1(quantBlocks(n), 0), a2(quantBlocks(n), 0);
  otc_kernels::adamw8bit_update(s, p.data(), g.data(), q1.data(), q2.data(), a1.data(), a2.data(),
                                nullptr, 0, n);
  for (int64_t i = 0; i < n; ++i)
    updateElementOf<OTC_ADAMW>(s, p32[i], g[i], m32[i], v32[i]);
  EXPECT_EQ(p, p32);
  for (int64_t i = 0; i < n; ++i) {
    int64_t b = i / kQuantBlock;
    // Half the widest gap between codes (0.9 / 64 in the signed map's top decade).
    EXPECT_LE(std::fabs(kDynamicMapSigned[q1[i]] * a1[b] - m32[i]), 0.5 * 0.9 / 64 * a1[b] * 1.0001);
    EXPECT_LE(std::fabs(kDynamicMapUnsigned[q2[i]] * a2[b] - v32[i]), 0.5 * 0.9 / 64 * a2[b] * 1.0001);
  }
}

} // namespace

// --no-decay's patterns: POSIX extended, searched anywhere in the name, as
// llvm::Regex does for --lora-targets; patterns whose compiled form would
// grow past memory are refused up front, not handed to regcomp.
TEST(NamePattern, SearchesNamesAndRefusesExplosivePatterns) {
  otc::NamePattern p;
  std::string why;
  ASSERT_TRUE(p.compile("bias$|(^|\\.)ln[0-9]+\\.", why)) << why;
  EXPECT_TRUE(p.matches("h.0.attn.bias"));
  EXPECT_TRUE(p.matches("h.3.ln2.weight"));
  EXPECT_FALSE(p.matches("h.0.attn.bias_q"));
  EXPECT_FALSE(p.matches("h.0.kln2x"));
  otc::NamePattern bad;
  EXPECT_FALSE(bad.compile("(", why));
  EXPECT_FALSE(bad.compile("9" + std::string(64, '+'), why));
  EXPECT_EQ(why, "too many nested repetitions");
  EXPECT_FALSE(bad.compile("a{100}{1000}", why));
  // (found by fuzz-train-options: seconds in regcomp, not memory)
  EXPECT_FALSE(bad.compile("6*" + std::string(10, '+') + "ay", why));
  EXPECT_EQ(why, "too many nested repetitions");
  EXPECT_FALSE(bad.compile(std::string(2000, 'a'), why));
  EXPECT_FALSE(bad.matches("a")); // a failed compile matches nothing
  otc::NamePattern ok;
  EXPECT_TRUE(ok.compile("\\+{3}", why)) << why; // an escaped '+' is a literal
  EXPECT_TRUE(ok.matches("x+++"));
}
