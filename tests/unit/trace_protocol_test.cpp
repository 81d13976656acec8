// The trace record protocol both sides include (lib/tracing/audit/trace_protocol.h):
// what the audit library's escaping writes, the parser reads back.
#include <gtest/gtest.h>

#include <string>

#include "runpatch/tracing/trace_records.hpp"
#include "tracing/audit/trace_protocol.h"

namespace runpatch {
namespace {

// A field as the audit library's put_field writes it.
std::string written_field(const std::string& text) {
  std::string out(1, RUNPATCH_FIELD_SEPARATOR);
  for (char c : text) {
    if (char letter = runpatch_escape_letter(c)) {
      out += RUNPATCH_ESCAPE;
      out += letter;
    } else {
      out += c;
    }
  }
  return out;
}

TEST(TraceProtocol, NamesWithTabsNewlinesAndBackslashesRoundTrip) {
  const std::string requester = "/odd\tdir/lib\\x.so", name = "lib\nname.so";
  std::string line = std::string(1, RUNPATCH_RECORD_SEARCH) + "\t42\t1" + written_field(requester) +
                     written_field(name) + RUNPATCH_RECORD_END;
  auto records = parse_trace_records(line);
  ASSERT_TRUE(records) << records.error().message();
  ASSERT_EQ(records->size(), 1u);
  EXPECT_EQ((*records)[0].kind, TraceRecord::Kind::Search);
  EXPECT_EQ((*records)[0].pid, 42);
  EXPECT_EQ((*records)[0].requester, requester);
  EXPECT_EQ((*records)[0].name, name);
}

TEST(TraceProtocol, ATruncatedLastRecordIsDroppedAndAMalformedOneIsAnError) {
  std::string process = std::string(1, RUNPATCH_RECORD_PROCESS) + "\t7\t1" + written_field("/bin/prog") + "\n";
  auto cut = parse_trace_records(process + "O\t7");  // killed in its write: no end, too few fields
  ASSERT_TRUE(cut) << cut.error().message();
  EXPECT_EQ(cut->size(), 1u);
  auto malformed = parse_trace_records(process + "O\t7\n" + process);
  ASSERT_FALSE(malformed);
  EXPECT_EQ(malformed.error().code, ErrorCode::Malformed);
}

}  // namespace
}  // namespace runpatch
