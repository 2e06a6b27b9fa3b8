#include "cli/progress.hpp"

#include <cstdio>

namespace gausskl::cli {

Progress::Progress(std::string what, bool enabled)
    : what_(std::move(what)),
      enabled_(enabled),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

Progress::~Progress() {
  if (drawn_) std::fputs("\r\033[K", stderr);  // leave the terminal line clean
}

void Progress::operator()(std::int64_t done, std::int64_t total) {
  if (!enabled_ || total <= 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < total && now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double left = done > 0 ? elapsed * static_cast<double>(total - done) / done : 0;
  std::fprintf(stderr, "\r\033[K%s: %3.0f%% (%lld of %lld rows, %.0f s, about %.0f s left)",
               what_.c_str(), 100.0 * static_cast<double>(done) / static_cast<double>(total),
               static_cast<long long>(done), static_cast<long long>(total), elapsed, left);
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace gausskl::cli
