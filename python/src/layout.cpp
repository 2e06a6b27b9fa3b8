#include "layout.hpp"

namespace gausskl::python {

std::int64_t Shape::count() const {
  std::int64_t n = 1;
  for (int k = 0; k < ndim; ++k)
    n *= dims[k];
  return n;
}

bool Shape::operator==(const Shape& o) const {
  if (ndim != o.ndim) return false;
  for (int k = 0; k < ndim; ++k)
    if (dims[k] != o.dims[k]) return false;
  return true;
}

std::string Shape::text() const {
  std::string t = "(";
  for (int k = 0; k < ndim; ++k)
    t += (k ? ", " : "") + std::to_string(dims[k]);
  return t + (ndim == 1 ? ",)" : ")");
}

bool batch_shape(const Array& a, int event_rank, Shape& out) {
  if (a.ndim < event_rank) return false;
  out.ndim = a.ndim - event_rank;
  for (int k = 0; k < out.ndim; ++k)
    out.dims[k] = a.shape[k];
  return true;
}

bool broadcast(const Shape& a, const Shape& b, Shape& out) {
  out.ndim = std::max(a.ndim, b.ndim);
  for (int k = 0; k < out.ndim; ++k) {
    const int ka = k - (out.ndim - a.ndim), kb = k - (out.ndim - b.ndim);
    const std::int64_t x = ka >= 0 ? a.dims[ka] : 1, y = kb >= 0 ? b.dims[kb] : 1;
    if (x != y && x != 1 && y != 1) return false;
    out.dims[k] = x == 1 ? y : x;
  }
  return true;
}

int Layout::add(const Array& a, int event_rank, std::size_t itemsize) {
  Operand op;
  op.base = static_cast<const char*>(a.data);
  op.itemsize = itemsize;
  const int batch = a.ndim - event_rank, lead = shape_.ndim - batch;
  for (int k = 0; k < shape_.ndim; ++k) {
    const int j = k - lead;
    op.strides[k] = j >= 0 && a.shape[j] != 1 ? a.strides[j] : 0;
  }
  ops_.push_back(op);
  return static_cast<int>(ops_.size()) - 1;
}

int Layout::add_contiguous(void* base, std::int64_t row, std::size_t itemsize) {
  Operand op;
  op.base = static_cast<const char*>(base);
  op.itemsize = itemsize;
  std::int64_t s = row;
  for (int k = shape_.ndim - 1; k >= 0; --k) {
    op.strides[k] = shape_.dims[k] == 1 ? 0 : s;
    s *= shape_.dims[k];
  }
  ops_.push_back(op);
  return static_cast<int>(ops_.size()) - 1;
}

void Layout::merge() {
  // An empty batch is one call over zero rows.
  if (shape_.count() == 0) {
    axes_ = 1;
    merged_[0] = 0;
    first_axis_[0] = shape_.ndim - 1;
    for (Operand& op : ops_)
      op.strides[0] = 0;
    return;
  }
  axes_ = 0;
  for (int k = 0; k < shape_.ndim; ++k) {
    const std::int64_t n = shape_.dims[k];
    if (n == 1) continue;
    bool joins = axes_ > 0;
    for (const Operand& op : ops_) {
      if (!joins) break;
      joins = op.strides[axes_ - 1] == op.strides[k] * n;
    }
    if (joins) {
      merged_[axes_ - 1] *= n;
      for (Operand& op : ops_)
        op.strides[axes_ - 1] = op.strides[k];
    } else {
      merged_[axes_] = n;
      first_axis_[axes_] = k;
      for (Operand& op : ops_)
        op.strides[axes_] = op.strides[k];
      ++axes_;
    }
  }
}

std::int64_t Layout::slices() const {
  std::int64_t n = 1;
  for (int k = 0; k + 1 < axes_; ++k)
    n *= merged_[k];
  return n;
}

const char* Layout::at(int operand, std::int64_t slice) const {
  const Operand& op = ops_[operand];
  std::int64_t offset = 0;
  for (int k = axes_ - 2; k >= 0; --k) {
    offset += (slice % merged_[k]) * op.strides[k];
    slice /= merged_[k];
  }
  return op.base + offset * static_cast<std::int64_t>(op.itemsize);
}

std::string Layout::slice_text(std::int64_t slice) const {
  // The slice's index in the merged outer axes, spread back over the original axes.
  std::array<std::int64_t, kMaxDims> index{};
  for (int k = axes_ - 2; k >= 0; --k) {
    std::int64_t i = slice % merged_[k];
    slice /= merged_[k];
    const int end = k + 1 < axes_ ? first_axis_[k + 1] : shape_.ndim;
    for (int a = end - 1; a >= first_axis_[k]; --a) {
      index[a] = i % shape_.dims[a];
      i /= shape_.dims[a];
    }
  }
  std::string t = "[";
  const int inner_from = axes_ > 0 ? first_axis_[axes_ - 1] : shape_.ndim;
  for (int a = 0; a < shape_.ndim; ++a)
    t += (a ? ", " : "") + (a >= inner_from ? std::string(":") : std::to_string(index[a]));
  return t + "]";
}

}  // namespace gausskl::python
