// A one-line progress report on stderr for long all-pairs runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace gausskl::cli {

class Progress {
 public:
  // Reports only when `enabled` (the CLI passes: stderr is a terminal and no --quiet).
  Progress(std::string what, bool enabled);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Rows done out of total; redraws at most a few times a second.
  void operator()(std::int64_t done, std::int64_t total);

 private:
  std::string what_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace gausskl::cli
