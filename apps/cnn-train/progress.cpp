// Progress bar on a terminal, plain log lines elsewhere.
#include "apps/cnn-train/progress.h"

#include <chrono>
#include <cmath>
#include <cstdio>

namespace cnn::train {

namespace {

constexpr int kBarWidth = 24;
constexpr double kRedrawInterval = 0.1;  // seconds between bar redraws

double now_s() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

}  // namespace

std::string format_duration(double seconds) {
  const int64_t s = std::isfinite(seconds) && seconds > 0 ? int64_t(seconds + 0.5) : 0;
  char buf[32];
  if (seconds < 60) {
    std::snprintf(buf, sizeof buf, "%.1f s", std::isfinite(seconds) && seconds > 0 ? seconds : 0.0);
    return buf;
  }
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", (long long)(s / 3600), (long long)(s / 60 % 60),
                  (long long)(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", (long long)(s / 60), (long long)(s % 60));
  return buf;
}

std::string progress_text(const ProgressInfo& i) {
  char loss[32] = "-";  // before the first log interval
  if (!std::isnan(i.loss)) std::snprintf(loss, sizeof loss, "%.4f", i.loss);
  char buf[256];
  std::snprintf(buf, sizeof buf, "epoch %lld/%lld step %lld/%lld loss %s lr %.2e %.0f img/s ETA %s",
                (long long)(i.epoch + 1), (long long)i.epochs, (long long)i.step, (long long)i.total_steps, loss, i.lr,
                i.images_per_s, format_duration(i.eta_s).c_str());
  return buf;
}

Progress::~Progress() { clear_bar(); }

void Progress::step(const ProgressInfo& i) {
  if (!tty_) return;
  const double t = now_s();
  if (i.epoch_step != i.epoch_steps && t - last_draw_ < kRedrawInterval) return;
  last_draw_ = t;
  const int filled = i.epoch_steps > 0 ? int(kBarWidth * i.epoch_step / i.epoch_steps) : 0;
  std::string bar(size_t(filled), '#');
  bar.resize(kBarWidth, '.');
  std::printf("\r[%s] %lld/%lld %s\x1b[K", bar.c_str(), (long long)i.epoch_step, (long long)i.epoch_steps,
              progress_text(i).c_str());
  std::fflush(stdout);
  bar_shown_ = true;
}

void Progress::log(const ProgressInfo& i) {
  if (tty_) return;
  std::printf("%s\n", progress_text(i).c_str());
  std::fflush(stdout);
}

void Progress::line(const std::string& text) {
  clear_bar();
  std::printf("%s\n", text.c_str());
  std::fflush(stdout);
}

void Progress::clear_bar() {
  if (!bar_shown_) return;
  std::printf("\r\x1b[K");
  std::fflush(stdout);
  bar_shown_ = false;
}

}  // namespace cnn::train
