// Batch shapes at the boundary: the library takes one batch axis ([N, ...] views with any
// strides); callers have any number, broadcast as torch and NumPy broadcast. The batch axes of
// every array of a call (and of its result) are aligned to the broadcast shape (missing and
// size-1 axes get stride 0), then merged wherever one stride describes two axes for every array
// at once, as TensorIterator does. What is left is looped over: usually nothing (latents
// [B, T, D] merge into one axis of B * T rows; a [D] prior broadcasts with stride 0), so one
// library call covers the batch without a copy. An axis that cannot merge (loc [5, 3, 2] with
// scale_tril [3, 2, 2]) gives one library call per index of the axes before it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "arrays.hpp"

namespace gausskl::python {

struct Shape {
  int ndim = 0;
  std::array<std::int64_t, kMaxDims> dims{};

  std::int64_t count() const;
  bool operator==(const Shape& o) const;
  std::string text() const;  // "(5, 3)", "()" like Python tuples
};

// The batch part of a: its first ndim - event_rank axes. False if a has fewer axes.
bool batch_shape(const Array& a, int event_rank, Shape& out);

// The broadcast of a and b (NumPy/torch rules); false if they do not broadcast.
bool broadcast(const Shape& a, const Shape& b, Shape& out);

// One operand's strides over a Layout's merged axes, and where its data starts.
struct Operand {
  const char* base = nullptr;
  std::size_t itemsize = 0;
  std::array<std::int64_t, kMaxDims> strides{};  // per merged axis, elements
};

class Layout {
 public:
  // Aligns operands to `shape`: each with its batch shape and batch strides (the leading axes of
  // its array). A result operand is C-contiguous over `shape` with `row` elements per batch
  // index (add it with add_contiguous).
  explicit Layout(const Shape& shape) : shape_(shape) {}
  int add(const Array& a, int event_rank, std::size_t itemsize);
  int add_contiguous(void* base, std::int64_t row, std::size_t itemsize);
  // Merges axes; call after every operand is added.
  void merge();

  // The merged axes: the last is the library's batch axis (inner()), the others are looped.
  std::int64_t inner() const { return axes_ == 0 ? 1 : merged_[axes_ - 1]; }
  std::int64_t inner_stride(int operand) const {
    return axes_ == 0 ? 0 : ops_[operand].strides[axes_ - 1];
  }
  std::int64_t slices() const;  // product of the outer axes (1 if none)
  // The data of operand k at the start of slice s (0 <= s < slices()).
  const char* at(int operand, std::int64_t slice) const;
  const Shape& shape() const { return shape_; }
  // The index of slice s's first element in the broadcast shape, e.g. "[1, 0, :]".
  std::string slice_text(std::int64_t slice) const;

 private:
  Shape shape_;
  std::vector<Operand> ops_;
  std::array<std::int64_t, kMaxDims> merged_{};
  std::array<int, kMaxDims> first_axis_{};  // the first original axis of each merged axis
  int axes_ = 0;
};

}  // namespace gausskl::python
