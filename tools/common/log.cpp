#include "log.hpp"

#include <cstdio>

namespace runpatch::cli {

namespace {

struct LogSettings {
  std::string prefix;
  LogLevel lowest = LogLevel::Info;
};

LogSettings& settings() {
  static LogSettings current;
  return current;
}

bool shown(LogLevel level) { return level == LogLevel::Error || level >= settings().lowest; }

}  // namespace

void configure_log(std::string prefix, LogLevel lowest) { settings() = {std::move(prefix), lowest}; }

void log_text(LogLevel level, std::string_view text) {
  if (!shown(level)) return;
  std::fflush(stdout);
  std::fwrite(text.data(), 1, text.size(), stderr);
}

void log_message(LogLevel level, std::string_view message) {
  if (!shown(level)) return;
  std::string line = settings().prefix;
  line.append(message).push_back('\n');
  log_text(level, line);
}

}  // namespace runpatch::cli
