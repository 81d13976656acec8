// The tools' one logging path: prefix, threshold, and errors always shown.
#include <gtest/gtest.h>

#include "log.hpp"

namespace runpatch::cli {
namespace {

std::string logged(LogLevel lowest, void (*write)()) {
  configure_log("tool: ", lowest);
  testing::internal::CaptureStderr();
  write();
  std::string text = testing::internal::GetCapturedStderr();
  configure_log("", LogLevel::Info);
  return text;
}

void one_of_each() {
  log_debug("d {}", 1);
  log_info("i {}", 2);
  log_warning("w {}", 3);
  log_error("e {}", 4);
}

TEST(Log, ThresholdHidesLowerLevelsButNeverErrors) {
  EXPECT_EQ(logged(LogLevel::Debug, one_of_each), "tool: d 1\ntool: i 2\ntool: w 3\ntool: e 4\n");
  EXPECT_EQ(logged(LogLevel::Info, one_of_each), "tool: i 2\ntool: w 3\ntool: e 4\n");
  EXPECT_EQ(logged(LogLevel::Warning, one_of_each), "tool: w 3\ntool: e 4\n");
  EXPECT_EQ(logged(LogLevel::Error, one_of_each), "tool: e 4\n");
}

TEST(Log, TextIsWrittenAsItIs) {
  auto text = [] {
    log_text(LogLevel::Warning, "warning: as another tool words it\n");
    log_text(LogLevel::Debug, "hidden\n");
  };
  EXPECT_EQ(logged(LogLevel::Info, text), "warning: as another tool words it\n");
}

}  // namespace
}  // namespace runpatch::cli
