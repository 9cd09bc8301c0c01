// Console output of a run: on a terminal one progress bar line redrawn in place (step, loss, lr, img/s, ETA);
// otherwise (pipes, files, CI) plain log lines at each log interval. Full lines (evaluation, epoch summaries)
// clear the bar first.
#pragma once

#include <cstdint>
#include <string>

namespace cnn::train {

struct ProgressInfo {
  int64_t epoch = 0, epochs = 0;            // 0-based epoch, epoch count
  int64_t epoch_step = 0, epoch_steps = 0;  // optimizer steps done in this epoch, per epoch
  int64_t step = 0, total_steps = 0;        // global optimizer steps done, in the whole run
  double loss = 0;                          // mean training loss of the last log interval (NaN: none yet)
  double lr = 0;
  double images_per_s = 0;
  double eta_s = 0;  // remaining wall time of the run
};

class Progress {
 public:
  // tty: whether stdout is a terminal (bar) or not (log lines).
  explicit Progress(bool tty) : tty_(tty) {}
  ~Progress();
  // Called after every optimizer step: redraws the bar on a terminal (at most ~10 times a second).
  void step(const ProgressInfo& info);
  // Called at each log interval: a log line when not on a terminal.
  void log(const ProgressInfo& info);
  // Prints a whole line (clears the bar on a terminal).
  void line(const std::string& text);
  bool tty() const { return tty_; }

 private:
  bool tty_;
  bool bar_shown_ = false;
  double last_draw_ = -1;
  void clear_bar();
};

// "1:02:03" / "12:34" for a duration in seconds.
std::string format_duration(double seconds);
// The same text as a log line: "epoch 1/3 step 50/1407 loss 0.6543 lr 1.00e-03 1520 img/s ETA 12:34".
std::string progress_text(const ProgressInfo& info);

}  // namespace cnn::train
