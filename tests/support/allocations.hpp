// Counts the bytes requested from operator new while an instance is alive (all threads), and the
// peak of the bytes live at once. Linking this file replaces the global operator new and delete
// (plain and aligned) of the test program.
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
  std::size_t peak_bytes() const;   // the most live at once so far, above the level at the start
};

}  // namespace gausskl::test
