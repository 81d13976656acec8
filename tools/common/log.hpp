// The one path every tool's messages to stderr take: a prefix per tool
// ("runpatch: ", "patchelf: "), one threshold set by -q/-v. Results go to
// stdout; stdout is flushed before each message so that the two streams
// interleave as they were written (the auto-patchelf script's order).
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <utility>

namespace runpatch::cli {

enum class LogLevel { Debug, Info, Warning, Error };

// The prefix of every message (the tool's name and ": ") and the lowest level
// shown. Errors are always shown.
void configure_log(std::string prefix, LogLevel lowest = LogLevel::Info);

// Writes prefix + message + '\n' when level is shown.
void log_message(LogLevel level, std::string_view message);

// Writes text as it is, without prefix or newline, when level is shown: for
// messages whose exact words another tool fixed (patchelf's warnings, the
// auto-patchelf script's lines, argparse's usage) and the progress line.
void log_text(LogLevel level, std::string_view text);

template <class... Args>
void log_error(fmt::format_string<Args...> format, Args&&... args) {
  log_message(LogLevel::Error, fmt::format(format, std::forward<Args>(args)...));
}
template <class... Args>
void log_warning(fmt::format_string<Args...> format, Args&&... args) {
  log_message(LogLevel::Warning, fmt::format(format, std::forward<Args>(args)...));
}
template <class... Args>
void log_info(fmt::format_string<Args...> format, Args&&... args) {
  log_message(LogLevel::Info, fmt::format(format, std::forward<Args>(args)...));
}
template <class... Args>
void log_debug(fmt::format_string<Args...> format, Args&&... args) {
  log_message(LogLevel::Debug, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace runpatch::cli
