// Progress of long runs (pairwise, knn) on stderr: rows done, the rate and the time left.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace gausskl::cli {

class Progress {
 public:
  enum class Mode {
    off,
    terminal,  // one line redrawn in place a few times a second, erased at the end
    lines,     // a line every `every_seconds` and one at the end (a log, a batch job's stderr)
  };
  Progress(std::string what, Mode mode, double every_seconds = 10);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Rows done out of total, as the library reports them after each block of rows.
  void operator()(std::int64_t done, std::int64_t total);

 private:
  std::string what_;
  Mode mode_;
  std::chrono::duration<double> every_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace gausskl::cli
