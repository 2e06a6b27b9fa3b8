#include "support/allocations.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>

namespace gausskl::test {
namespace {

// Every block carries its size in a header of this many bytes (keeps malloc's alignment).
constexpr std::size_t kHeader = alignof(std::max_align_t);

std::atomic<bool> counting{false};
std::atomic<std::size_t> total{0};
std::atomic<std::size_t> live{0}, peak{0}, base{0};

void note_new(std::size_t size) {
  if (counting.load(std::memory_order_relaxed)) total += size;
  const std::size_t now = live += size;
  std::size_t seen = peak.load(std::memory_order_relaxed);
  while (now > seen && !peak.compare_exchange_weak(seen, now)) {
  }
}

}  // namespace

CountAllocations::CountAllocations() {
  total = 0;
  base = live.load();
  peak = base.load();
  counting = true;
}

CountAllocations::~CountAllocations() {
  counting = false;
}

std::size_t CountAllocations::total_bytes() const {
  return total;
}

std::size_t CountAllocations::peak_bytes() const {
  return peak - std::min(peak.load(), base.load());
}

}  // namespace gausskl::test

// The default array forms forward to these (the nothrow forms are at the end).
void* operator new(std::size_t size) {
  if (void* p = std::malloc(size + gausskl::test::kHeader)) {
    *static_cast<std::size_t*>(p) = size;
    gausskl::test::note_new(size);
    return static_cast<char*>(p) + gausskl::test::kHeader;
  }
  throw std::bad_alloc();
}

void operator delete(void* p) noexcept {
  if (!p) return;
  void* block = static_cast<char*>(p) - gausskl::test::kHeader;
  gausskl::test::live -= *static_cast<std::size_t*>(block);
  std::free(block);
}

void operator delete(void* p, std::size_t) noexcept {
  operator delete(p);
}

// Aligned forms: the header takes a whole alignment unit, so the block stays aligned.
void* operator new(std::size_t size, std::align_val_t align) {
  const std::size_t a = std::max(static_cast<std::size_t>(align), gausskl::test::kHeader);
  void* p = nullptr;
  if (posix_memalign(&p, a, size + a) != 0) throw std::bad_alloc();
  char* user = static_cast<char*>(p) + a;
  reinterpret_cast<std::size_t*>(user)[-1] = size;
  gausskl::test::note_new(size);
  return user;
}

void operator delete(void* p, std::align_val_t align) noexcept {
  if (!p) return;
  const std::size_t a = std::max(static_cast<std::size_t>(align), gausskl::test::kHeader);
  gausskl::test::live -= static_cast<std::size_t*>(p)[-1];
  std::free(static_cast<char*>(p) - a);
}

void operator delete(void* p, std::size_t, std::align_val_t align) noexcept {
  operator delete(p, align);
}

// Nothrow forms, defined here too: a sanitizer's runtime replaces every form it does not see
// defined, and its nothrow new (std::stable_sort's buffer) would reach the delete above.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return operator new(size);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

void operator delete(void* p, const std::nothrow_t&) noexcept {
  operator delete(p);
}

void* operator new(std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  try {
    return operator new(size, align);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

void operator delete(void* p, std::align_val_t align, const std::nothrow_t&) noexcept {
  operator delete(p, align);
}
