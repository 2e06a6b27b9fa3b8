// Counts the bytes requested from operator new while an instance is alive (all threads).
// Linking this file replaces the global operator new of the test program.
#pragma once

#include <cstddef>

namespace gausskl::test {

class CountAllocations {
 public:
  CountAllocations();
  ~CountAllocations();
  CountAllocations(const CountAllocations&) = delete;
  CountAllocations& operator=(const CountAllocations&) = delete;

  std::size_t total_bytes() const;  // the sum of every request so far
};

}  // namespace gausskl::test
