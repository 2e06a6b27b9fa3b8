#include "support/allocations.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace gausskl::test {
namespace {

std::atomic<bool> counting{false};
std::atomic<std::size_t> total{0};

}  // namespace

CountAllocations::CountAllocations() {
  total = 0;
  counting = true;
}

CountAllocations::~CountAllocations() {
  counting = false;
}

std::size_t CountAllocations::total_bytes() const {
  return total;
}

}  // namespace gausskl::test

// The default array and nothrow forms forward to these.
void* operator new(std::size_t size) {
  if (gausskl::test::counting.load(std::memory_order_relaxed)) gausskl::test::total += size;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}

void operator delete(void* p) noexcept {
  std::free(p);
}

void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
