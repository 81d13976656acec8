#include "console.hpp"

#include "../common/log.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

namespace runpatch::cli {

bool stdout_wants_color() {
  // no-color.org: NO_COLOR disables colour only when set to something; a dumb
  // terminal cannot show it.
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  return ::isatty(1) && !(no_color && *no_color) && !(term && std::string_view(term) == "dumb");
}

Verbosity& verbosity() {
  static Verbosity v;
  return v;
}

void add_verbosity_flags(CLI::App* app, Verbosity& verbosity) {
  auto* quiet = app->add_flag("-q,--quiet", verbosity.quiet, "Print problems only, no summary");
  app->add_flag("-v,--verbose", verbosity.verbose, "Also print every file touched, and how")->excludes(quiet);
}

void setup_logging(const Verbosity& verbosity) {
  configure_log("runpatch: ", verbosity.quiet     ? LogLevel::Warning
                              : verbosity.verbose ? LogLevel::Debug
                                                  : LogLevel::Info);
}

Progress::Progress(std::string label, bool quiet) : label_(std::move(label)), enabled_(!quiet && ::isatty(2)) {}

void Progress::finish() {
  std::lock_guard<std::mutex> guard(lock_);
  if (shown_) log_text(LogLevel::Info, "\r\033[K");  // leave the line to what follows
  shown_ = false;
  enabled_ = false;
}

void Progress::update(size_t done, size_t total) {
  std::lock_guard<std::mutex> guard(lock_);
  if (!enabled_ || total < 200) return;
  auto now = std::chrono::steady_clock::now();
  if (done != total && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  shown_ = true;
  int width = 30, filled = static_cast<int>(width * done / total);
  log_text(LogLevel::Info, fmt::format("\rrunpatch {}: [{}{}] {}/{} files", label_, std::string(filled, '#'),
                                       std::string(width - filled, '.'), done, total));
}

}  // namespace runpatch::cli
