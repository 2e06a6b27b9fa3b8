// Buffer: 64-byte aligned storage of the requested size, moves, and the blocks a thread keeps:
// a freed block of a plan-sized buffer serves the next one of a size it fits (no fresh pages),
// tiny ones and ones far larger than the request are not reused.
#include "cpu/common/buffer.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <utility>

namespace gausskl::cpu {
namespace {

TEST(Buffer, AlignedStorageOfTheRequestedSize) {
  for (const std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{1} << 20}) {
    Buffer<double> b;
    b.resize(n);
    ASSERT_NE(b.data(), nullptr);
    EXPECT_EQ(b.size(), n);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 64, 0u);
    b.data()[0] = 1;
    b.data()[n - 1] = 2;  // the whole range is writable (ASan checks)
    b.clear();
    EXPECT_EQ(b.data(), nullptr);
    EXPECT_EQ(b.size(), 0u);
  }
}

TEST(Buffer, Moves) {
  Buffer<float> a;
  a.resize(100);
  float* const at = a.data();
  Buffer<float> b(std::move(a));
  EXPECT_EQ(b.data(), at);
  EXPECT_EQ(b.size(), 100u);
  EXPECT_EQ(a.data(), nullptr);  // a moved-from Buffer is empty
  Buffer<float> c;
  c.resize(3);
  c = std::move(b);
  EXPECT_EQ(c.data(), at);
}

TEST(Buffer, ABlockIsKeptForTheNextBufferOfASizeItFits) {
  double* first = nullptr;
  {
    Buffer<double> b;
    b.resize(100000);  // 800 KB
    first = b.data();
  }
  Buffer<double> again;
  again.resize(90000);  // fits, not more than twice
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(again.size(), 90000u);
  again.clear();
  Buffer<double> small;
  small.resize(10000);  // 80 KB: the kept 800 KB block is more than twice that
  EXPECT_NE(small.data(), first);
}

TEST(Buffer, EachThreadKeepsItsOwn) {
  double* mine = nullptr;
  {
    Buffer<double> b;
    b.resize(50000);
    mine = b.data();
  }
  std::thread([mine] {
    Buffer<double> other;
    other.resize(50000);
    EXPECT_NE(other.data(), mine);  // this thread's kept blocks, not the other's
  }).join();
  Buffer<double> again;
  again.resize(50000);
  EXPECT_EQ(again.data(), mine);
}

}  // namespace
}  // namespace gausskl::cpu
