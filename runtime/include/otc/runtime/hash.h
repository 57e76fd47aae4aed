// The runtime's hashes: FNV-1a for fingerprints (checkpoints, names) and
// splitmix64, the counter-based generator behind every random choice a run
// makes (shuffles, token windows, LoRA's initial A), so each is a function
// of the seed and a position and a resumed run makes the same ones.
#ifndef OTC_RUNTIME_HASH_H
#define OTC_RUNTIME_HASH_H

#include <cstddef>
#include <cstdint>

namespace otc {

/// 64-bit FNV-1a of `n` bytes, continuing from `h`.
inline uint64_t fingerprint(const void *data, size_t n, uint64_t h = 0xcbf29ce484222325ull) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < n; ++i)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

/// splitmix64's output for state `x`.
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

} // namespace otc

#endif
