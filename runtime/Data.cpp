#include "Data.h"

#include "Backend.h"
#include "otc/runtime/hash.h"
#include "Npy.h"
#include "SafeFile.h"
#include "TensorFiles.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <numeric>

namespace otc {
namespace {

[[noreturn]] void die(const std::string &message) { throw Fatal{message}; }

/// A uniform integer in [0, n) from 64 random bits (Lemire's reduction).
uint64_t below(uint64_t bits, uint64_t n) {
  return uint64_t((unsigned __int128)bits * n >> 64);
}

int64_t countKept(const otc_tensor_desc &d, const int64_t *labels, int64_t n) {
  int64_t kept = 0;
  for (int64_t k = 0; k < n; ++k)
    kept += !d.has_ignore_index || labels[k] != d.ignore_index;
  return kept;
}

class Arrays final : public DataSource {
  static constexpr size_t kReleaseAbove = size_t(256) << 20;

public:
  Arrays(const std::string &dir, const InputSet &set, bool shuffle, uint64_t seed)
      : set(set), shuffle(shuffle), seed(seed) {
    TensorFileNames files("inputs", "read");
    for (size_t i = 0; i < set.inputs.size(); ++i) {
      const otc_tensor_desc &d = *set.inputs[i];
      std::string path = dir + "/" + files.claim(d.name);
      MappedNpy a;
      std::string error;
      if (!mapNpy(path, a, error))
        die(error + " (the data for input '" + d.name + "')");
      const std::string &dtype = a.array.dtype;
      bool fits = d.dtype == OTC_I64 ? integerBytes(dtype) > 0 : dtype == npyDtypeFor(d.dtype);
      if (!fits)
        die("'" + path + "' has dtype " + dtype + ", but input '" + d.name + "' needs " +
            npyDtypeFor(d.dtype) +
            (d.dtype == OTC_F32 ? " (float32)" : d.dtype == OTC_BOOL ? " (bool)" : " (int64, or a narrower integer type)"));
      const std::vector<int64_t> &shape = a.array.shape;
      bool ok = (int)shape.size() == d.rank;
      for (int k = 1; ok && k < d.rank; ++k)
        ok = shape[k] == d.shape[k];
      if (!ok)
        die("'" + path + "' has shape " + shapeText(shape.data(), shape.size()) +
            ", but input '" + d.name + "' needs samples of shape " +
            shapeText(d.shape + 1, d.rank - 1) + " along axis 0");
      if (count >= 0 && shape[0] != count)
        die("'" + path + "' has " + std::to_string(shape[0]) + " samples, but '" +
            fileNameFor(set.inputs[0]->name) + "' has " + std::to_string(count));
      count = shape[0];
      // The scan's pages leave this process's memory after it.
      checkValues(d, dtype, a.data, a.bytes, count, path, set.requireFinite);
      a.file.release(0, a.file.size());
      rowBytes.push_back(count ? a.bytes / size_t(count) : 0);
      paths.push_back(path);
      arrays.push_back(std::move(a));
    }
    pad = set.padWithIgnored && set.tokenLabels >= 0;
    perEpoch = pad ? (count + set.microBatch - 1) / set.microBatch : count / set.microBatch;
  }

  int64_t samples() const override { return count; }
  int64_t microBatchesPerEpoch() const override { return perEpoch; }
  std::string describe() const override {
    return std::to_string(count) + " samples" + (shuffle ? ", shuffled every epoch" : "");
  }

  void fill(int64_t index, HostBatch &out) override {
    int64_t N = set.microBatch, epoch = index / perEpoch, at = index % perEpoch * N;
    if (shuffle && epoch != orderEpoch)
      shuffleFor(epoch);
    out.inputs.resize(arrays.size());
    out.counted = 0;
    for (size_t i = 0; i < arrays.size(); ++i) {
      const otc_tensor_desc &d = *set.inputs[i];
      const MappedNpy &a = arrays[i];
      size_t width = d.dtype == OTC_I64 ? integerBytes(a.array.dtype) : 0;
      size_t row = rowBytes[i], perRow = width ? row / width : 0;
      std::vector<char> &dst = out.inputs[i];
      dst.resize(width ? size_t(N) * perRow * sizeof(int64_t) : size_t(N) * row);
      for (int64_t r = 0; r < N; ++r) {
        int64_t sample = shuffle ? order[at + r] : at + r;
        bool padding = sample >= count; // pad: sample 0 with its labels ignored
        sample = padding ? 0 : sample;
        const char *src = a.data + size_t(sample) * row;
        if (width)
          widenInto(a.array.dtype, src, int64_t(perRow),
                    reinterpret_cast<int64_t *>(dst.data()) + r * perRow, paths[i],
                    sample * int64_t(perRow));
        else
          std::memcpy(dst.data() + r * row, src, row);
        // A large file's rows leave this process's memory once copied (its
        // pages stay in the page cache), so a data set larger than memory
        // never becomes resident here.
        if (a.file.size() >= kReleaseAbove)
          a.file.release(size_t(src - a.file.data()), row);
        if (padding && int(i) == set.tokenLabels)
          std::fill_n(reinterpret_cast<int64_t *>(dst.data()) + r * perRow, perRow, d.ignore_index);
      }
      if (int(i) == set.tokenLabels)
        out.counted = countKept(d, reinterpret_cast<const int64_t *>(dst.data()),
                                int64_t(dst.size() / sizeof(int64_t)));
    }
  }

private:
  /// Fisher-Yates over all samples, from (seed, epoch): every epoch a new
  /// order, the same in every run with that seed.
  void shuffleFor(int64_t epoch) {
    order.resize(size_t(count));
    std::iota(order.begin(), order.end(), int64_t(0));
    uint64_t state = splitmix64(seed ^ splitmix64(uint64_t(epoch) + 0x5851f42d4c957f2dull));
    for (int64_t i = count - 1; i > 0; --i)
      std::swap(order[i], order[below(splitmix64(state + uint64_t(i)), uint64_t(i) + 1)]);
    orderEpoch = epoch;
  }

  InputSet set;
  bool shuffle;
  uint64_t seed;
  std::vector<MappedNpy> arrays;
  std::vector<size_t> rowBytes;
  std::vector<std::string> paths;
  int64_t count = -1, perEpoch = 0;
  bool pad = false;
  std::vector<int64_t> order;
  int64_t orderEpoch = -1;
};

/// Tokens of one flat file: .npy of any integer type, or .bin, either
/// llm.c's (a 256-int32 header: magic 20240520, version, token count; then
/// uint16 tokens) or nanoGPT's (bare uint16).
class Tokens final : public DataSource {
public:
  Tokens(const TrainOptions &o, const otc_program &prog) : prog(prog), seed(o.seed), path(o.tokens) {
    std::string error;
    MappedFile file; // for the header and the size; windows are read with pread
    const char *data = nullptr;
    auto ends = [&](const char *suffix) {
      return path.size() >= std::strlen(suffix) &&
             path.compare(path.size() - std::strlen(suffix), std::string::npos, suffix) == 0;
    };
    if (ends(".npy")) {
      MappedNpy a;
      if (!mapNpy(path, a, error))
        die(error + " (--tokens)");
      dtype = a.array.dtype;
      if (!integerBytes(dtype))
        die("'" + path + "' has dtype " + dtype + "; a token file holds integers (uint16, int32, ...)");
      file = std::move(a.file);
      data = a.data;
      length = int64_t(a.bytes / integerBytes(dtype));
    } else if (ends(".bin")) {
      if (!file.map(path, error))
        die(error + " (--tokens)");
      dtype = "<u2";
      int32_t head[3] = {0, 0, 0};
      if (file.size() >= 1024)
        std::memcpy(head, file.data(), sizeof head);
      if (head[0] == 20240520) { // llm.c
        if (head[1] != 1)
          die("'" + path + "' is llm.c token format version " + std::to_string(head[1]) +
              "; otc reads version 1 (uint16 tokens)");
        length = head[2];
        if (length < 0 || uint64_t(file.size()) != 1024 + 2 * uint64_t(length))
          die("'" + path + "' has an llm.c header of " + std::to_string(head[2]) +
              " tokens, but holds " + std::to_string(file.size() - 1024) + " bytes after it");
        data = file.data() + 1024;
      } else { // nanoGPT: bare uint16
        if (file.size() % 2)
          die("'" + path + "' holds " + std::to_string(file.size()) +
              " bytes, not a whole number of uint16 tokens");
        data = file.data();
        length = int64_t(file.size() / 2);
      }
    } else {
      die("--tokens '" + path + "' is neither .npy nor .bin");
    }
    auto find = [&](const std::string &name, const char *flag) {
      for (int i = 0; i < prog.num_inputs; ++i)
        if (name == prog.inputs[i].name)
          return i;
      std::string names;
      for (int i = 0; i < prog.num_inputs; ++i)
        names += std::string(i ? ", " : "") + "'" + prog.inputs[i].name + "'";
      die(std::string(flag) + " '" + name + "' is not an input of the model; its inputs are " + names);
    };
    feeds[0] = find(o.tokenInput, "--token-input");
    feeds[1] = find(o.tokenLabels, "--token-labels");
    if (feeds[0] == feeds[1])
      die("--token-input and --token-labels name the same input '" + o.tokenInput + "'");
    for (int i = 0; i < prog.num_inputs; ++i) {
      const otc_tensor_desc &d = prog.inputs[i];
      if (i != feeds[0] && i != feeds[1])
        die("input '" + std::string(d.name) + "' has no data: a token stream feeds only '" +
            o.tokenInput + "' and '" + o.tokenLabels + "'");
      if (d.dtype != OTC_I64 || d.rank != 2)
        die("input '" + std::string(d.name) + "' has shape " + shapeText(d.shape, d.rank) +
            (d.dtype != OTC_I64 ? " and is not integer" : "") +
            "; a token stream feeds [N, T] integer inputs");
    }
    // Windows are read with pread, not through the map: mapped pages
    // count as the process's own memory (whole large folios of the page
    // cache on recent kernels), read ones stay in the page cache only.
    offset = size_t(data - file.data());
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      die("cannot read data file '" + path + "': " + std::strerror(errno));
    T = prog.inputs[feeds[0]].shape[1];
    if (prog.inputs[feeds[1]].shape[1] != T)
      die("--token-input '" + o.tokenInput + "' has " + std::to_string(T) +
          " positions but --token-labels '" + o.tokenLabels + "' has " +
          std::to_string(prog.inputs[feeds[1]].shape[1]));
    if (length < T + 1)
      die("'" + path + "' holds " + std::to_string(length) + " tokens, fewer than one window of " +
          std::to_string(T + 1));
  }

  ~Tokens() override {
    if (fd >= 0)
      close(fd);
  }
  int64_t samples() const override { return length; }
  int64_t microBatchesPerEpoch() const override { return 0; }
  std::string describe() const override {
    return "a stream of " + std::to_string(length) + " tokens, random windows of " +
           std::to_string(T + 1);
  }

  void fill(int64_t index, HostBatch &out) override {
    int64_t N = prog.micro_batch;
    size_t width = integerBytes(dtype);
    out.inputs.assign(prog.num_inputs, std::vector<char>(size_t(N * T) * sizeof(int64_t)));
    std::vector<int64_t> window(size_t(T + 1));
    std::vector<char> raw(size_t(T + 1) * width);
    for (int64_t r = 0; r < N; ++r) {
      // Window starts are uniform over the file, drawn from (seed, sample).
      uint64_t sample = uint64_t(index) * uint64_t(N) + uint64_t(r);
      int64_t start = int64_t(below(splitmix64(splitmix64(seed) ^ sample), uint64_t(length - T)));
      if (!readAllAt(fd, raw.data(), raw.size(), (long long)(offset + size_t(start) * width)))
        die("cannot read tokens " + std::to_string(start) + " to " + std::to_string(start + T) +
            " of '" + path + "': " + std::strerror(errno));
      widenInto(dtype, raw.data(), T + 1, window.data(), path, start);
      for (int f = 0; f < 2; ++f) {
        const otc_tensor_desc &d = prog.inputs[feeds[f]];
        int64_t *dst = reinterpret_cast<int64_t *>(out.inputs[feeds[f]].data()) + r * T;
        std::memcpy(dst, window.data() + f, size_t(T) * sizeof(int64_t));
        for (int64_t k = 0; k < T; ++k)
          if (d.num_classes > 0 && (dst[k] < 0 || dst[k] >= d.num_classes) &&
              !(d.has_ignore_index && dst[k] == d.ignore_index))
            die("'" + path + "' holds token " + std::to_string(dst[k]) + " at position " +
                std::to_string(start + f + k) + ", outside input '" + d.name + "''s range [0, " +
                std::to_string(d.num_classes) + ")");
      }
    }
    out.counted = 0;
    if (prog.token_labels >= 0)
      out.counted = countKept(prog.inputs[prog.token_labels],
                              reinterpret_cast<const int64_t *>(out.inputs[prog.token_labels].data()),
                              N * T);
  }

private:
  const otc_program &prog;
  uint64_t seed;
  std::string path, dtype;
  size_t offset = 0; // of the first token in the file
  int fd = -1;
  int64_t length = 0, T = 0;
  int feeds[2] = {-1, -1};
};

} // namespace

InputSet trainingInputs(const otc_program &prog) {
  InputSet set;
  for (int i = 0; i < prog.num_inputs; ++i)
    set.inputs.push_back(&prog.inputs[i]);
  set.microBatch = prog.micro_batch;
  // With a loss scaler a non-finite sample is a skipped step, as in PyTorch
  // AMP; without one it could only stop the run later.
  set.requireFinite = prog.loss_scale_mode == OTC_LOSS_SCALE_NONE;
  set.tokenLabels = prog.token_labels;
  return set;
}

std::unique_ptr<DataSource> openArrays(const std::string &dir, const InputSet &set,
                                       bool shuffle, uint64_t seed) {
  return std::make_unique<Arrays>(dir, set, shuffle, seed);
}

std::unique_ptr<DataSource> openTokens(const TrainOptions &o, const otc_program &prog) {
  return std::make_unique<Tokens>(o, prog);
}

Prefetcher::Prefetcher(Fill fill, int64_t first, int64_t end, int depth)
    : fill(std::move(fill)), slots(size_t(depth)), filled(size_t(depth), -1), next(first), end(end),
      consumed(first) {
  thread = std::thread([this] { work(); });
}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard<std::mutex> g(lock);
    stop = true;
  }
  changed.notify_all();
  thread.join();
}

void Prefetcher::work() {
  std::unique_lock<std::mutex> g(lock);
  while (!stop && !failure && next < end) {
    // Slot next % depth is free once every earlier use of it is consumed.
    if (next >= consumed + int64_t(slots.size())) {
      changed.wait(g);
      continue;
    }
    int64_t index = next;
    std::vector<HostBatch> &slot = slots[size_t(index % int64_t(slots.size()))];
    g.unlock();
    std::exception_ptr error;
    try {
      fill(index, slot);
    } catch (...) {
      error = std::current_exception();
    }
    g.lock();
    if (error)
      failure = error;
    else
      filled[size_t(index % int64_t(slots.size()))] = index;
    ++next;
    changed.notify_all();
  }
}

const std::vector<HostBatch> &Prefetcher::get(int64_t index) {
  std::unique_lock<std::mutex> g(lock);
  consumed = index; // earlier micro-batches are done with
  changed.notify_all();
  size_t slot = size_t(index % int64_t(slots.size()));
  changed.wait(g, [&] { return filled[slot] == index || failure; });
  if (filled[slot] != index)
    std::rethrow_exception(failure);
  return slots[slot];
}

} // namespace otc
