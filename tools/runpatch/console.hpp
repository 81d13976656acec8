// What the tools say besides their results: -q/-v set the threshold of the
// log (tools/common/log.hpp), and a progress line for long tree work when
// stderr is a terminal.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

#include "runpatch/reporting/json_text.hpp"

namespace runpatch::cli {

struct Verbosity {
  bool quiet = false;    // -q: problems only
  bool verbose = false;  // -v: every file touched, and how
};

// Colours on stdout: only on a terminal that is not TERM=dumb, and never with
// NO_COLOR set to a non-empty value (no-color.org).
bool stdout_wants_color();

// The process's verbosity, set by the flags below.
Verbosity& verbosity();

// The same -q/-v flags, with the same words, on every subcommand.
void add_verbosity_flags(CLI::App* app, Verbosity& verbosity);

// "runpatch: message" on stderr at the threshold the flags ask for: errors
// and warnings always, summaries unless -q, per-file detail with -v.
void setup_logging(const Verbosity& verbosity);

// "\rrunpatch LABEL: 1200/3819 files" on a terminal, at most every 100 ms;
// silent under -q, when stderr is not a terminal, or for small batches.
class Progress {
 public:
  Progress(std::string label, bool quiet);
  ~Progress() { finish(); }
  void update(size_t done, size_t total);
  void finish();  // clears the line; no more updates

 private:
  std::string label_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_{};
  std::mutex lock_;  // workers report from several threads
};

}  // namespace runpatch::cli
