// Philox4x32-10 against the known-answer vectors published with Random123
// (Salmon et al., SC'11; kat_vectors): the generator behind dropout's masks.
#include "otc/runtime/kernel_support.h"

#include <array>
#include <gtest/gtest.h>

namespace {

void expectPhilox(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key,
                  std::array<uint32_t, 4> want) {
  uint32_t out[4];
  otc_philox4x32(ctr.data(), key.data(), out);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(out[i], want[i]) << "word " << i;
}

TEST(Philox, ZeroCounterAndKey) {
  expectPhilox({0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
}

TEST(Philox, AllOnes) {
  expectPhilox({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
               {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
}

TEST(Philox, DigitsOfPi) {
  expectPhilox({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
               {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

} // namespace
