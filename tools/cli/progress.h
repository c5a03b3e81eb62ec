// A one-line progress bar for long checks: done/total, a bar, the case at hand and an
// ETA from the mean time per case so far. Shown only when stderr is a terminal (logs, CI
// output, pipes and tests never see it) and redrawn at most ten times a second.
// tools/python/verlconf/progress.py draws the same line for the harness.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace verlconf::tools {

class Progress {
 public:
  explicit Progress(size_t total) : total_(total), enabled_(isatty(STDERR_FILENO) == 1) {}
  ~Progress() {
    if (enabled_ && drawn_) std::fprintf(stderr, "\r\033[K");
  }
  void Step(const std::string& what) {
    ++done_;
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (drawn_ && now - last_ < std::chrono::milliseconds(100) && done_ < total_) return;
    last_ = now;
    drawn_ = true;
    constexpr int kWidth = 24;
    const double frac = total_ ? static_cast<double>(done_) / static_cast<double>(total_) : 1.0;
    const int filled = static_cast<int>(frac * kWidth);
    const std::string bar = std::string(filled, '#') + std::string(kWidth - filled, '.');
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double eta = done_ ? elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_) : 0.0;
    std::fprintf(stderr, "\r\033[Kconform [%s] %zu/%zu ETA %s %.60s", bar.c_str(), done_, total_, Clock(eta).c_str(),
                 what.c_str());
    std::fflush(stderr);
  }

 private:
  static std::string Clock(double seconds) {
    // Never negative; rounds as the harness's progress.py does, so both draw the same clock.
    const long s = static_cast<long>(seconds + 0.5);  // NOLINT(bugprone-incorrect-roundings)
    char b[32];
    std::snprintf(b, sizeof b, "%ld:%02ld", s / 60, s % 60);
    return b;
  }
  size_t total_, done_ = 0;
  bool enabled_, drawn_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_{};
};

}  // namespace verlconf::tools
