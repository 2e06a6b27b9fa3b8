// Heap storage for values that are all written before any is read: unlike std::vector's resize,
// it does not clear them first (clearing the q = p plan's panels was 3% of a 100 x 100 x 256
// pairwise call).
#pragma once

#include <cstddef>
#include <memory>

namespace gausskl::cpu {

template <class T>
class Buffer {
 public:
  // n uninitialized values (the old ones are freed first); throws std::bad_alloc.
  void resize(std::size_t n) {
    data_.reset();
    data_ = std::make_unique_for_overwrite<T[]>(n);
    size_ = n;
  }
  void clear() {
    data_.reset();
    size_ = 0;
  }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
  std::unique_ptr<T[]> data_;
  std::size_t size_ = 0;
};

}  // namespace gausskl::cpu
