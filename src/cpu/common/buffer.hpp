// Heap storage for the operands and work buffers of a plan: values that are all written before
// any is read, so not cleared first (std::vector's resize does; clearing the q = p plan's panels
// was 3% of a 100 x 100 x 256 pairwise call), in 64-byte aligned blocks that a thread keeps for
// its next calls (buffer.cpp), so that a call's buffers do not come fresh from the kernel page by
// page each time.
#pragma once

#include <cstddef>
#include <utility>

namespace gausskl::cpu {

namespace detail {
// At least `bytes` bytes, 64-byte aligned, with the block's own size in *capacity: one this
// thread gave back before if one fits, else new (std::bad_alloc).
void* take_block(std::size_t bytes, std::size_t* capacity);
// A block from take_block, kept for this thread's next take_block or freed.
void give_block(void* block, std::size_t capacity) noexcept;
}  // namespace detail

template <class T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& other) noexcept { swap(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    Buffer(std::move(other)).swap(*this);
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { clear(); }

  // n uninitialized values (the old ones are released first); throws std::bad_alloc.
  void resize(std::size_t n) {
    clear();
    data_ = static_cast<T*>(detail::take_block(n * sizeof(T), &capacity_));
    size_ = n;
  }
  void clear() noexcept {
    if (data_) detail::give_block(data_, capacity_);
    data_ = nullptr;
    size_ = capacity_ = 0;
  }
  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  void swap(Buffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
  }

  T* data_ = nullptr;
  std::size_t size_ = 0, capacity_ = 0;
};

}  // namespace gausskl::cpu
