#include "cli/progress.hpp"

#include <cstdio>
#include <utility>

namespace gausskl::cli {
namespace {

// Seconds as a person reads them: 0.4 s, 12 s.
std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f s", s < 10 ? 1 : 0, s);
  return text;
}

// "35% (10500 of 30000 rows, 2100 rows/s, 5.0 s, about 10 s left)"; at the end "100% (30000 of
// 30000 rows, 2100 rows/s, in 14 s)".
std::string report(std::int64_t done, std::int64_t total, double elapsed) {
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
  const double left = done > 0 ? elapsed * static_cast<double>(total - done) / done : 0;
  char text[160];
  std::snprintf(text, sizeof text, "%3.0f%% (%lld of %lld rows, %.*f rows/s, ",
                100.0 * static_cast<double>(done) / static_cast<double>(total),
                static_cast<long long>(done), static_cast<long long>(total), rate < 10 ? 1 : 0,
                rate);
  if (done >= total) return text + ("in " + seconds(elapsed) + ")");
  return text + (seconds(elapsed) + ", about " + seconds(left) + " left)");
}

}  // namespace

Progress::Progress(std::string what, Mode mode, double every_seconds)
    : what_(std::move(what)),
      mode_(mode),
      every_(every_seconds),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

Progress::~Progress() {
  if (drawn_ && mode_ == Mode::terminal) std::fputs("\r\033[K", stderr);  // a clean line
}

void Progress::operator()(std::int64_t done, std::int64_t total) {
  if (mode_ == Mode::off || total <= 0) return;
  const auto now = std::chrono::steady_clock::now();
  const auto wait = mode_ == Mode::terminal ? std::chrono::duration<double>(0.2) : every_;
  if (done < total && now - last_ < wait) return;
  last_ = now;
  const std::string text = report(done, total, std::chrono::duration<double>(now - start_).count());
  if (mode_ == Mode::terminal) {
    std::fprintf(stderr, "\r\033[K%s: %s", what_.c_str(), text.c_str());
  } else {
    std::fprintf(stderr, "gausskl: %s: %s\n", what_.c_str(), text.c_str());
  }
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace gausskl::cli
