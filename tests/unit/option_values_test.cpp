// The values of enum-valued options (trace --fail-on, check --closure and
// --fail-on): each name parses back to its value, nothing else parses.
#include <gtest/gtest.h>

#include "runpatch/checking/check.hpp"
#include "runpatch/tracing/trace_analysis.hpp"

namespace runpatch {
namespace {

template <class Values, class Name, class Parse>
void expect_round_trip(const Values& values, Name name, Parse parse, std::vector<std::string> expected_names) {
  std::vector<std::string> names;
  for (const auto& v : values) {
    names.emplace_back(name(v));
    EXPECT_EQ(parse(std::string(name(v))), v) << name(v);
  }
  EXPECT_EQ(names, expected_names);
  EXPECT_FALSE(parse("")) << "the empty name";
  EXPECT_FALSE(parse(expected_names.front() + "x")) << "a longer name";
}

TEST(OptionValues, TraceKindsClosuresAndSeveritiesParseBackByName) {
  expect_round_trip(kTraceKinds, trace_kind_name, parse_trace_kind, {"host-dependent", "undeclared-dlopen", "failed"});
  expect_round_trip(kClosures, closure_name, parse_closure, {"auto", "nix", "host"});
  expect_round_trip(kSeverities, severity_name, [](const std::string& s) { return parse_severity(s); },
                    {"error", "warning", "info"});
}

// What --fail-on tests is what the report lists: one predicate per kind.
TEST(OptionValues, ATraceCountsEachKindByTheSameTestAsItsLoads) {
  TraceAnalysis a;
  TracedLoad found_by_host, undeclared, failed, probe;
  found_by_host.host_dependent = true;
  found_by_host.path = "/usr/lib/libx.so";
  undeclared.request = LoadRequest::UndeclaredDlopen;
  undeclared.path = "/x/liby.so";
  probe.probe = true;  // a failed probe is not a failure
  a.loads = {found_by_host, undeclared, failed, probe};
  EXPECT_EQ(a.count(TraceKind::HostDependent), 1u);
  EXPECT_EQ(a.count(TraceKind::UndeclaredDlopen), 1u);
  EXPECT_EQ(a.count(TraceKind::Failed), 1u);
  EXPECT_TRUE(is_kind(failed, TraceKind::Failed));
  EXPECT_FALSE(is_kind(probe, TraceKind::Failed));
}

}  // namespace
}  // namespace runpatch
