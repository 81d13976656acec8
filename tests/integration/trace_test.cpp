// runpatch trace on the trace fixtures (fixtures/build-fixtures.sh:
// build_trace_fixtures), each report checked against the loader's own account
// of the same run: LD_DEBUG=libs names, for each library, the paths it tried
// and whose RPATH or RUNPATH each search path came from.
#include <csignal>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include <fstream>
#include <sstream>

#include "strict_json.hpp"
#include "fixtures.hpp"
#include "process.hpp"
#include "runpatch/tracing/trace_analysis.hpp"
#include "runpatch/tracing/trace_records.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;

fs::path trace_dir() { return test::fixtures_dir() / "trace"; }
fs::path trace_prog() { return trace_dir() / "bin/trace-prog"; }

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return a == b || fs::equivalent(a, b, ec);
}

// What LD_DEBUG=libs says about one library: the search paths' reasons and
// the files tried, in order.
struct DebugSearch {
  std::vector<std::string> reasons;  // "LD_LIBRARY_PATH", "RUNPATH from file X", "RPATH from file X", ...
  std::vector<std::string> tried;    // trying file=...
};

// The first search for name in LD_DEBUG=libs output (lines "PID:\tfind library=NAME [0]; searching").
DebugSearch debug_search(const std::string& output, const std::string& name) {
  DebugSearch search;
  std::istringstream in(output);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    auto at = line.find(":\t");
    std::string text = at == std::string::npos ? line : line.substr(at + 2);
    while (!text.empty() && text[0] == ' ') text.erase(0, 1);
    if (text.rfind("find library=", 0) == 0) {
      if (inside) break;
      inside = text.rfind("find library=" + name + " ", 0) == 0;
    } else if (inside && text.rfind("search path=", 0) == 0) {
      auto open = text.rfind('(');
      search.reasons.push_back(text.substr(open + 1, text.size() - open - 2));
    } else if (inside && text.rfind("search cache=", 0) == 0) {
      search.reasons.push_back("cache");
    } else if (inside && text.rfind("trying file=", 0) == 0) {
      search.tried.push_back(text.substr(12));
    }
  }
  return search;
}

struct Trace {
  int exit_code;
  nlohmann::json report;
  std::string output;  // stdout and stderr of runpatch and the command
};

// `runpatch trace --json -o FILE -- trace-prog ACTIONS...` with LD_LIBRARY_PATH as given.
Trace trace(const std::vector<std::string>& actions, const std::string& ld_library_path = "",
            const std::vector<std::string>& extra = {}) {
  fs::path dir =
      test::scratch_dir("trace/" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
  std::vector<std::string> argv = {"env", "LD_LIBRARY_PATH=" + ld_library_path, RUNPATCH_CLI, "trace", "--json",
                                   "-o",  (dir / "report.json").string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("--");
  argv.push_back(trace_prog().string());
  argv.insert(argv.end(), actions.begin(), actions.end());
  auto result = test::run_command(argv, true);
  Trace t{result.exit_code, nullptr, result.output};
  std::ifstream in(dir / "report.json");
  if (in) t.report = test::parse_json(in);
  return t;
}

// The LD_DEBUG=libs account of the same run.
std::string debug_run(const std::vector<std::string>& actions, const std::string& ld_library_path = "") {
  std::vector<std::string> argv = {"env", "LD_DEBUG=libs", "LD_LIBRARY_PATH=" + ld_library_path, trace_prog().string()};
  argv.insert(argv.end(), actions.begin(), actions.end());
  return test::run_command(argv, true).output;
}

const nlohmann::json* find_load(const nlohmann::json& report, const std::string& name) {
  for (const auto& l : report["loads"])
    if (l["name"] == name) return &l;
  return nullptr;
}

// The report's hit is the loader's last try, and the report's step is the loader's reason for that path.
void expect_matches_loader(const nlohmann::json& load, const DebugSearch& debug) {
  ASSERT_FALSE(debug.tried.empty()) << load.dump();
  EXPECT_TRUE(same_file(debug.tried.back(), load["path"])) << debug.tried.back() << " vs " << load["path"];
  ASSERT_FALSE(debug.reasons.empty());
  const std::string& reason = debug.reasons.back();
  std::string step = load["found_by"];
  if (step == "ld_library_path") {
    EXPECT_EQ(reason, "LD_LIBRARY_PATH");
  } else if (step == "cache") {
    EXPECT_EQ(reason, "cache");
  } else if (step == "runpath" || step == "rpath") {
    auto from = reason.find(" from file ");
    ASSERT_NE(from, std::string::npos) << reason;
    std::string kind = reason.substr(0, from), object = reason.substr(from + 11);
    EXPECT_TRUE(same_file(object, load["rule_object"])) << object << " vs " << load["rule_object"];
    EXPECT_EQ(kind == "RPATH" ? "rpath of" : "runpath of", std::string(load["rule"]).substr(0, kind.size() + 3));
  }
}

TEST(Trace, AuditLibraryNeedsNothing) {
  fs::path audit = fs::path(RUNPATCH_CLI).parent_path() / "../lib/runpatch/runpatch-audit.so";
  ASSERT_TRUE(fs::exists(audit));
  auto dynamic = test::run_command({"readelf", "-d", "-W", audit.string()});
  EXPECT_EQ(dynamic.output.find("(NEEDED)"), std::string::npos) << dynamic.output;
  auto undefined = test::run_command({"nm", "-D", "--undefined-only", audit.string()});
  EXPECT_EQ(undefined.output, "") << undefined.output;
  auto exported = test::run_command({"nm", "-D", "--defined-only", audit.string()});
  for (const char* symbol : {"la_version", "la_objsearch", "la_objopen", "la_activity"})
    EXPECT_NE(exported.output.find(symbol), std::string::npos) << symbol;
}

TEST(Trace, LibraryFoundOnlyThroughLdLibraryPathIsHostDependent) {
  std::string llp = (trace_dir() / "llp").string();
  auto t = trace({"main:libtrace-llp.so"}, llp);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  const auto* load = find_load(t.report, "libtrace-llp.so");
  ASSERT_TRUE(load) << t.report.dump(2);
  EXPECT_EQ((*load)["found_by"], "ld_library_path");
  EXPECT_EQ((*load)["request"], "undeclared-dlopen");
  EXPECT_TRUE((*load)["host_dependent"]);
  EXPECT_TRUE(same_file((*load)["runpath_directory"], llp));
  EXPECT_TRUE(same_file((*load)["requester"], trace_prog()));
  bool fixed = false;
  for (const auto& f : t.report["fixes"])
    for (const auto& c : f["commands"]) fixed |= c == "runpatch set --add-runpath " + llp + " " + trace_prog().string();
  EXPECT_TRUE(fixed) << t.report["fixes"].dump(2);
  expect_matches_loader(*load, debug_search(debug_run({"main:libtrace-llp.so"}, llp), "libtrace-llp.so"));
  // CI's gate.
  EXPECT_EQ(trace({"main:libtrace-llp.so"}, llp, {"--fail-on", "host-dependent"}).exit_code, 1);
}

TEST(Trace, LibraryFoundThroughItsRequestersRunpath) {
  auto t = trace({"host:libtrace-own.so"});
  ASSERT_EQ(t.exit_code, 0) << t.output;
  const auto* load = find_load(t.report, "libtrace-own.so");
  ASSERT_TRUE(load) << t.report.dump(2);
  EXPECT_EQ((*load)["found_by"], "runpath");
  EXPECT_FALSE((*load)["host_dependent"]);
  EXPECT_TRUE(same_file((*load)["requester"], trace_dir() / "lib/libtrace-host.so"));
  EXPECT_TRUE(same_file((*load)["rule_object"], trace_dir() / "lib/libtrace-host.so"));
  EXPECT_TRUE((*load)["model_agrees"]);
  expect_matches_loader(*load, debug_search(debug_run({"host:libtrace-own.so"}), "libtrace-own.so"));
  // Only the C library (from ld.so.cache: the fixtures are built by the host's compiler) needs the host.
  for (const auto& l : t.report["loads"])
    if (l["host_dependent"]) {
      EXPECT_EQ(l["name"], "libc.so.6") << l.dump(2);
    }
  EXPECT_EQ(trace({"host:libtrace-own.so"}, "", {"--fail-on", "undeclared-dlopen"}).exit_code, 1);
}

// libtrace-norunpath.so has no runpath of its own: the program's DT_RPATH finds what it dlopens.
TEST(Trace, LibraryFoundThroughAnotherObjectsRpath) {
  auto t = trace({"norunpath:libtrace-viarpath.so"});
  ASSERT_EQ(t.exit_code, 0) << t.output;
  const auto* load = find_load(t.report, "libtrace-viarpath.so");
  ASSERT_TRUE(load) << t.report.dump(2);
  EXPECT_TRUE(same_file((*load)["requester"], trace_dir() / "lib/libtrace-norunpath.so"));
  EXPECT_TRUE(same_file((*load)["rule_object"], trace_prog()));
  EXPECT_EQ(std::string((*load)["rule"]).substr(0, 8), "rpath of");
  EXPECT_EQ((*load)["found_by"], "rpath") << "DT_RPATH apart from DT_RUNPATH: it is inherited";
  EXPECT_FALSE((*load)["host_dependent"]);
  expect_matches_loader(*load, debug_search(debug_run({"norunpath:libtrace-viarpath.so"}), "libtrace-viarpath.so"));
}

// Every search of one run with all the actions, each against the loader's account of the same run.
TEST(Trace, EveryLoadMatchesTheLoadersAccount) {
  std::string llp = (trace_dir() / "llp").string();
  std::vector<std::string> actions = {"main:libtrace-llp.so", "host:libtrace-own.so", "norunpath:libtrace-viarpath.so",
                                      "main:libtrace-missing.so"};
  auto t = trace(actions, llp);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  std::string debug = debug_run(actions, llp);
  size_t compared = 0;
  for (const auto& load : t.report["loads"]) {
    if (load["path"].is_null() || load["steps"].empty()) continue;
    SCOPED_TRACE(load["name"].get<std::string>());
    expect_matches_loader(load, debug_search(debug, load["name"]));
    ++compared;
  }
  EXPECT_GE(compared, 6u);  // libtrace-host, libtrace-norunpath, libc, and the three dlopens found
}

TEST(Trace, MissingLibraryIsReportedAsFailed) {
  auto t = trace({"main:libtrace-missing.so"});
  ASSERT_EQ(t.exit_code, 0) << t.output;
  const auto* load = find_load(t.report, "libtrace-missing.so");
  ASSERT_TRUE(load) << t.report.dump(2);
  EXPECT_TRUE((*load)["path"].is_null());
  EXPECT_EQ(t.report["summary"]["failed"], 1);
  EXPECT_EQ(t.report["exit_code"], 1);  // the program says "fail" and exits 1
  EXPECT_TRUE((*load)["found_by"].is_null()) << "a failed load was found by nothing";
  // The loader tried the same files, in the same order.
  auto debug = debug_search(debug_run({"main:libtrace-missing.so"}), "libtrace-missing.so");
  std::vector<std::string> tried;
  for (const auto& s : (*load)["steps"])
    if (s["step"] != "cache") tried.push_back(s["path"]);
  EXPECT_EQ(tried, debug.tried);
  EXPECT_EQ(trace({"main:libtrace-missing.so"}, "", {"--fail-on", "failed"}).exit_code, 1);
}

// A failed dlopen followed by a successful one of the same library (cuDNN's
// libcudnn_graph.so.9.19.0, .so.9.19, .so.9) is a probe: neither failed nor
// undeclared, and --fail-on failed passes; a miss alone is still a failure.
TEST(Trace, FallbackProbesAreNotFailures) {
  std::string llp = (trace_dir() / "llp").string();
  auto t = trace({"try:libtrace-llp.so.9.19.0", "try:libtrace-llp.so.9", "main:libtrace-llp.so"}, llp);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  EXPECT_EQ(t.report["summary"]["failed"], 0) << t.report.dump(2);
  EXPECT_EQ(t.report["summary"]["probes"], 2) << t.report.dump(2);
  const auto* probe = find_load(t.report, "libtrace-llp.so.9.19.0");
  ASSERT_TRUE(probe) << t.report.dump(2);
  EXPECT_TRUE((*probe)["probe"]);
  EXPECT_TRUE((*probe)["path"].is_null());
  EXPECT_EQ(trace({"try:libtrace-llp.so.9", "main:libtrace-llp.so"}, llp, {"--fail-on", "failed"}).exit_code, 0);
  auto alone = trace({"try:libtrace-llp.so.9"}, llp, {"--fail-on", "failed"});
  EXPECT_EQ(alone.exit_code, 1) << "a miss nothing follows is a failure";
  EXPECT_EQ(alone.report["summary"]["failed"], 1);
}

// With --fail-on (CI), a failing command fails the step with its own status,
// whatever the trace found; without it the report is the result (exit 0).
TEST(Trace, FailOnKeepsTheCommandsFailure) {
  auto traced = [](std::vector<std::string> fail_on, const std::string& script) {
    std::vector<std::string> argv{RUNPATCH_CLI, "trace", "-o", "/dev/null"};
    argv.insert(argv.end(), fail_on.begin(), fail_on.end());
    for (const char* word : {"--", "/bin/sh", "-c"}) argv.push_back(word);
    argv.push_back(script);
    return test::run_command(argv).exit_code;
  };
  EXPECT_EQ(traced({"--fail-on", "undeclared-dlopen"}, "exit 3"), 3);
  EXPECT_EQ(traced({"--fail-on", "failed"}, "kill -SEGV $$"), 128 + SIGSEGV);
  EXPECT_EQ(traced({"--fail-on", "failed"}, "exit 0"), 0);
  EXPECT_EQ(traced({}, "exit 3"), 0);
}

TEST(Trace, LibraryOpensASiblingThroughOrigin) {
  auto t = trace({"host:$ORIGIN/libtrace-sibling.so"});
  ASSERT_EQ(t.exit_code, 0) << t.output;
  const auto* load = find_load(t.report, "$ORIGIN/libtrace-sibling.so");
  ASSERT_TRUE(load) << t.report.dump(2);
  EXPECT_TRUE(same_file((*load)["path"], trace_dir() / "lib/libtrace-sibling.so"));
  EXPECT_TRUE(same_file((*load)["requester"], trace_dir() / "lib/libtrace-host.so"));
  EXPECT_FALSE((*load)["host_dependent"]);
  auto debug =
      test::run_command({"env", "LD_DEBUG=files", trace_prog().string(), "host:$ORIGIN/libtrace-sibling.so"}, true);
  EXPECT_NE(debug.output.find("file=" + (trace_dir() / "bin/../lib/libtrace-sibling.so").string()), std::string::npos)
      << debug.output;
}

// The child execs trace-prog again: its loads are traced too, with its pid.
TEST(Trace, ChildProgramsAreTraced) {
  auto t = trace({"exec:" + trace_prog().string(), "host:libtrace-own.so"});
  ASSERT_EQ(t.exit_code, 0) << t.output;
  ASSERT_GE(t.report["processes"].size(), 2u) << t.report.dump(2);
  long parent = t.report["processes"][0]["pid"];
  const auto* load = find_load(t.report, "libtrace-own.so");
  ASSERT_TRUE(load) << t.report.dump(2);
  EXPECT_NE((*load)["pid"], parent);
  EXPECT_EQ(t.report["processes"][1]["parent"], parent);
}

TEST(Trace, CommandOutputIsItsOwn) {
  auto plain = test::run_command({trace_prog().string(), "host:libtrace-own.so", "main:libtrace-missing.so"});
  auto t = trace({"host:libtrace-own.so", "main:libtrace-missing.so"});
  EXPECT_EQ(t.output, plain.output);
  EXPECT_EQ(t.report["exit_code"], plain.exit_code);
}

TEST(Trace, SetuidProgramIsRefused) {
  fs::path dir = test::scratch_dir("trace/setuid");
  fs::copy(trace_dir() / "bin", dir / "bin", fs::copy_options::recursive);
  fs::copy(trace_dir() / "lib", dir / "lib", fs::copy_options::recursive);
  ASSERT_EQ(::chmod((dir / "bin/trace-prog").c_str(), 04755), 0);
  auto r = test::run_command({RUNPATCH_CLI, "trace", "--", (dir / "bin/trace-prog").string()}, true);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("is setuid"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("secure mode"), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;  // one message, nothing run
  ASSERT_EQ(::chmod((dir / "bin/trace-prog").c_str(), 02755), 0);
  EXPECT_NE(test::run_command({RUNPATCH_CLI, "trace", "--", (dir / "bin/trace-prog").string()}, true)
                .output.find("is setgid"),
            std::string::npos);
  ASSERT_EQ(::chmod((dir / "bin/trace-prog").c_str(), 0755), 0);
  EXPECT_EQ(
      test::run_command({RUNPATCH_CLI, "trace", "-o", (dir / "r").string(), "--", (dir / "bin/trace-prog").string()})
          .exit_code,
      0);
}

TEST(Trace, StaticMuslAndForeignProgramsAreRefused) {
  auto arches = test::fixture_arches();
  auto r = test::run_command({RUNPATCH_CLI, "trace", "--", (arches.at(0).dir / "prog-static").string()}, true);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("statically linked"), std::string::npos) << r.output;
  // A musl program: the host's program with musl's loader as its interpreter (runpatch set does it).
  fs::path musl = test::scratch_dir("trace/musl") / "prog";
  fs::copy_file(arches.at(0).dir / "prog-pie", musl);
  ASSERT_EQ(
      test::run_command({RUNPATCH_CLI, "set", "--interpreter", "/lib/ld-musl-x86_64.so.1", musl.string()}).exit_code,
      0);
  auto m = test::run_command({RUNPATCH_CLI, "trace", "--", musl.string()}, true);
  EXPECT_EQ(m.exit_code, 1);
  EXPECT_NE(m.output.find("musl's loader"), std::string::npos) << m.output;
  for (const auto& arch : arches) {
    if (arch.name == arches.at(0).name) continue;
    auto f = test::run_command({RUNPATCH_CLI, "trace", "--", (arch.dir / "prog-pie").string()}, true);
    EXPECT_EQ(f.exit_code, 1) << arch.name;
    EXPECT_NE(f.output.find("is built for"), std::string::npos) << f.output;
  }
}

// doctor --run: the prediction for the fixture CUDA program, then what it really loaded.
TEST(Trace, DoctorRunConfirmsItsLibcudaPrediction) {
  fs::path pkg = test::fixture_arches().at(0).dir / "cuda-pkg";
  auto run = [&](const std::string& ld_library_path) {
    return test::run_command({"env", "LD_LIBRARY_PATH=" + ld_library_path, RUNPATCH_CLI, "doctor", "--run", "--",
                              (pkg / "bin/cuda-prog").string()});
  };
  auto found = run((pkg / "driver").string());
  EXPECT_NE(found.output.find("loaded " + (pkg / "driver/libcuda.so.1").string()), std::string::npos) << found.output;
  EXPECT_NE(found.output.find(": confirmed"), std::string::npos) << found.output;
  // Nothing in reach: libcudart's runpath names stubs/, which holds libcuda.so, not libcuda.so.1.
  auto missing = run("");
  EXPECT_NE(missing.output.find("loaded nothing (the load failed)"), std::string::npos) << missing.output;
  EXPECT_NE(missing.output.find("predicted: nothing: confirmed"), std::string::npos) << missing.output;
  EXPECT_EQ(missing.exit_code, 1);
}

// doctor --run of an interpreter that loads CUDA at run time (python, which
// dlopens an extension module, here libcudart by path through ctypes): the
// interpreter's own tree loads no libcuda; the prediction is made for the
// object the run saw load it, from that object's search, and confirmed.
TEST(Trace, DoctorRunPredictsForTheObjectsAnInterpreterLoads) {
  if (!test::have_program("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  fs::path pkg = test::fixture_arches().at(0).dir / "cuda-pkg";
  std::string cudart = (pkg / "lib/libcudart.so.13").string();
  auto run =
      test::run_command({"env", "LD_LIBRARY_PATH=" + (pkg / "driver").string(), RUNPATCH_CLI, "doctor", "--run", "--",
                         "/usr/bin/python3", "-c", "import ctypes; ctypes.CDLL('" + cudart + "').cudart_report()"});
  EXPECT_NE(run.output.find("not a CUDA program"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("loaded by the run: " + cudart), std::string::npos) << run.output;
  EXPECT_NE(run.output.find(cudart + " loaded " + (pkg / "driver/libcuda.so.1").string()), std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("predicted: " + (pkg / "driver/libcuda.so.1").string() + ": confirmed"), std::string::npos)
      << run.output;
  EXPECT_EQ(run.output.find("the prediction differs"), std::string::npos) << run.output;
}

// Records as another glibc may order them: the first objects' opens after all
// their searches; then a forked child that dlopens by name and by path.
TEST(TraceAnalysis, OpensMatchTheirSearchesInEitherOrder) {
  std::string prog = trace_prog().string(), lib = (trace_dir() / "bin/../lib").string();
  std::string host = lib + "/libtrace-host.so", norunpath = lib + "/libtrace-norunpath.so";
  std::string own = lib + "/plugins/libtrace-own.so", sibling = (trace_dir() / "lib/libtrace-sibling.so").string();
  std::string text = "P\t10\t1\t" + prog + "\nO\t10\t0\t\nA\t10\t1\n" +                      //
                     "S\t10\t1\t\tlibtrace-host.so\nS\t10\t4\t\t" + host + "\n" +            //
                     "S\t10\t1\t\tlibtrace-norunpath.so\nS\t10\t4\t\t" + norunpath + "\n" +  //
                     "O\t10\t0\t" + host + "\nO\t10\t0\t" + norunpath + "\nA\t10\t0\n" +     //
                     "F\t11\t10\t" + prog + "\nS\t11\t1\t" + host + "\tlibtrace-own.so\n" +  //
                     "S\t11\t4\t" + host + "\t" + own + "\nA\t11\t1\nO\t11\t0\t" + own + "\nA\t11\t0\n" +
                     "A\t11\t1\nO\t11\t0\t" + sibling + "\nA\t11\t0\n";
  auto records = parse_trace_records(text);
  ASSERT_TRUE(records) << records.error().message();
  SearchEnvironment env = SearchEnvironment::host(false);
  auto analysis = analyze_trace(*records, env);
  ASSERT_EQ(analysis.loads.size(), 4u);
  EXPECT_EQ(analysis.loads[0].path, host);
  EXPECT_EQ(analysis.loads[0].request, LoadRequest::Needed);
  EXPECT_EQ(analysis.loads[1].path, norunpath);
  EXPECT_EQ(analysis.loads[2].pid, 11);
  EXPECT_EQ(analysis.loads[2].path, own);
  EXPECT_EQ(analysis.loads[2].request, LoadRequest::UndeclaredDlopen);
  EXPECT_EQ(analysis.loads[2].rule_object, host);
  EXPECT_EQ(analysis.loads[3].request, LoadRequest::DlopenByPath);
  EXPECT_EQ(analysis.loads[3].path, sibling);
  EXPECT_EQ(analysis.failed(), 0u);
  ASSERT_EQ(analysis.processes.size(), 2u);
  EXPECT_EQ(analysis.processes[1].parent, 10);
}

TEST(TraceRecords, EscapesAreUndone) {
  auto records = parse_trace_records("P\t7\t1\t/bin/a\\tb\nS\t7\t4\t\t/x/l\\\\ib\\n.so\nA\t7\t1\n");
  ASSERT_TRUE(records) << records.error().message();
  ASSERT_EQ(records->size(), 3u);
  EXPECT_EQ((*records)[0].name, "/bin/a\tb");
  EXPECT_EQ((*records)[1].name, "/x/l\\ib\n.so");
  EXPECT_EQ((*records)[1].flag, 4u);
  EXPECT_FALSE(parse_trace_records("S\t7\t4\tonly-three\n"));
}

}  // namespace
}  // namespace runpatch
