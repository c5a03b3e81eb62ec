// A one-line progress counter for long checks, shown only when stderr is a terminal
// (so logs, CI output and tests never see it), redrawn at most ten times a second.
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
    std::fprintf(stderr, "\r\033[Kconform: %zu/%zu %s", done_, total_, what.c_str());
    std::fflush(stderr);
  }

 private:
  size_t total_, done_ = 0;
  bool enabled_, drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace verlconf::tools
