#include <gtest/gtest.h>

#include <set>
#include <string_view>

#include "runpatch/reading/expected.hpp"

namespace runpatch {
namespace {

Expected<int> parse_positive(int v) {
  if (v <= 0) return make_error(ErrorCode::InvalidInput, "f.so", "not positive", 16);
  return v;
}

Expected<int> doubled(int v) {
  RUNPATCH_TRY(int x, parse_positive(v));
  return 2 * x;
}

TEST(Expected, CarriesValueOrError) {
  auto ok = doubled(4);
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, 8);
  auto bad = doubled(-1);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message(), "f.so: not positive (at offset 0x10)");
  EXPECT_EQ(bad.error().code, ErrorCode::InvalidInput);
}

TEST(Expected, MessageWithoutFileOrOffset) {
  EXPECT_EQ(make_error(ErrorCode::Usage, "", "plain").message(), "plain");
  EXPECT_EQ(make_error(ErrorCode::Usage, "a", "b").message(), "a: b");
}

TEST(Expected, StatusPropagates) {
  auto check = [](bool fail) -> Status {
    if (fail) return make_error(ErrorCode::SystemCall, "x", "failed");
    return {};
  };
  auto outer = [&](bool fail) -> Status {
    RUNPATCH_CHECK(check(fail));
    return {};
  };
  EXPECT_TRUE(outer(false));
  ASSERT_FALSE(outer(true));
  EXPECT_EQ(outer(true).error().what, "failed");
  EXPECT_EQ(outer(true).error().code, ErrorCode::SystemCall);
}

// Each code has its own name: reports and tests tell codes apart by it.
TEST(Expected, EveryErrorCodeHasItsOwnName) {
  std::set<std::string_view> names;
  for (int i = 0; i <= int(ErrorCode::CannotTrace); ++i) {
    std::string_view name = error_code_name(ErrorCode(i));
    EXPECT_NE(name, "unknown") << i;
    EXPECT_TRUE(names.insert(name).second) << name;
  }
}

}  // namespace
}  // namespace runpatch
