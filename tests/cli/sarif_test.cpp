// check --sarif against the official SARIF 2.1.0 JSON schema (tests/data) and
// what GitHub code scanning requires of a log beyond it (docs.github.com,
// "SARIF support for code scanning"; the GH rules of Microsoft's SARIF
// multitool): the required fields, and the RFC 3986 form of every artifact URI.
#include <gtest/gtest.h>

#include <cctype>
#include <nlohmann/json.hpp>
#include <set>

#include "strict_json.hpp"
#include "fixtures.hpp"
#include "process.hpp"
#include "junit_lint.hpp"
#include "sarif_schema.hpp"
#include "runpatch/checking/check.hpp"
#include "runpatch/reporting/check_report.hpp"
#include "runpatch/reporting/utf8.hpp"
#include "synthetic_elf.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool non_empty_string(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() && !j[key].get<std::string>().empty();
}

// RFC 3986: every character is unreserved, a sub-delimiter, ':', '@', '/', '?',
// or a '%' followed by two hex digits.
bool is_uri_reference(const std::string& uri) {
  static const std::string allowed = "-._~!$&'()*+,;=:@/?#";
  for (size_t i = 0; i < uri.size(); ++i) {
    unsigned char c = uri[i];
    if (c == '%') {
      if (i + 2 >= uri.size() || !std::isxdigit(uri[i + 1]) || !std::isxdigit(uri[i + 2])) return false;
      i += 2;
    } else if (!std::isalnum(c) && allowed.find(char(c)) == std::string::npos) {
      return false;
    }
  }
  return true;
}

bool has_scheme(const std::string& uri) {
  size_t colon = uri.find(':');
  return colon != std::string::npos && uri.find_first_of("/?#") > colon && colon > 0 && std::isalpha(uri[0]);
}

// Every violation as "JSON pointer: what is wrong"; empty when the log is acceptable.
std::vector<std::string> github_sarif_violations(const json& log) {
  std::vector<std::string> out;
  auto fail = [&](const std::string& where, const std::string& what) { out.push_back(where + ": " + what); };
  if (!log.is_object()) return {"/: not an object"};
  if (log.value("version", "") != "2.1.0") fail("/version", "must be \"2.1.0\"");
  if (log.contains("$schema") && !log["$schema"].is_string()) fail("/$schema", "must be a string");
  if (!log.contains("runs") || !log["runs"].is_array()) return out.push_back("/runs: must be an array"), out;
  for (size_t r = 0; r < log["runs"].size(); ++r) {
    const json& run = log["runs"][r];
    std::string at = "/runs/" + std::to_string(r);
    if (!run.contains("tool") || !non_empty_string(run["tool"].value("driver", json::object()), "name"))
      fail(at + "/tool/driver/name", "required");
    std::set<std::string> rule_ids;
    const json rules = run.contains("tool") ? run["tool"].value("driver", json::object()).value("rules", json::array())
                                            : json::array();
    for (size_t i = 0; i < rules.size(); ++i) {
      std::string rat = at + "/tool/driver/rules/" + std::to_string(i);
      if (!non_empty_string(rules[i], "id"))
        fail(rat + "/id", "required");
      else if (!rule_ids.insert(rules[i]["id"]).second)
        fail(rat + "/id", "duplicate");
      if (rules[i].contains("shortDescription") && !non_empty_string(rules[i]["shortDescription"], "text"))
        fail(rat + "/shortDescription/text", "required");
    }
    if (!run.contains("results") || !run["results"].is_array()) {
      fail(at + "/results", "must be an array");
      continue;
    }
    static const std::set<std::string> levels = {"none", "note", "warning", "error"};
    for (size_t i = 0; i < run["results"].size(); ++i) {
      const json& result = run["results"][i];
      std::string rat = at + "/results/" + std::to_string(i);
      if (!result.contains("message") || !non_empty_string(result["message"], "text"))
        fail(rat + "/message/text", "required");
      if (!non_empty_string(result, "ruleId"))
        fail(rat + "/ruleId", "required");
      else if (!rule_ids.count(result["ruleId"]))
        fail(rat + "/ruleId", "not among the driver's rules");
      if (result.contains("level") && !levels.count(result["level"].get<std::string>()))
        fail(rat + "/level", "unknown");
      if (!result.contains("locations") || !result["locations"].is_array() || result["locations"].empty()) {
        fail(rat + "/locations", "at least one is required");
        continue;
      }
      for (size_t l = 0; l < result["locations"].size(); ++l) {
        std::string lat = rat + "/locations/" + std::to_string(l) + "/physicalLocation";
        json physical = result["locations"][l].value("physicalLocation", json::object());
        json artifact = physical.value("artifactLocation", json::object());
        if (!non_empty_string(artifact, "uri")) {
          fail(lat + "/artifactLocation/uri", "required");
          continue;
        }
        std::string uri = artifact["uri"];
        if (!is_uri_reference(uri)) fail(lat + "/artifactLocation/uri", "not an RFC 3986 URI: " + uri);
        if (artifact.contains("uriBaseId")) {
          if (has_scheme(uri) || uri.starts_with("/"))
            fail(lat + "/artifactLocation/uri", "must be relative with a uriBaseId");
        } else if (!uri.starts_with("file:///")) {
          fail(lat + "/artifactLocation/uri", "a URI without uriBaseId must be an absolute file:/// URI: " + uri);
        }
        // Every artifact check reports on is a binary file: SARIF 2.1.0 (3.30.1)
        // forbids the text properties of a region on one.
        json region = physical.value("region", json::object());
        for (const char* text : {"startLine", "endLine", "startColumn", "endColumn", "charOffset", "charLength"})
          if (region.contains(text)) fail(lat + "/region/" + text, "a text property on a binary artifact");
      }
    }
  }
  return out;
}

// Both: the schema's violations (when its validator is installed) and GitHub's.
std::vector<std::string> sarif_violations(const json& log) {
  std::vector<std::string> out = github_sarif_violations(log);
  if (auto schema = test::sarif_schema_violations(log))
    for (const auto& v : *schema) out.push_back("schema: " + v);
  return out;
}

TEST(SarifValidator, TheSchemaCatchesWhatItForbids) {
  auto none = test::sarif_schema_violations(json{{"version", "2.1.0"}, {"runs", json::array()}});
  if (!none) GTEST_SKIP() << "python3-jsonschema is not installed (scripts/install-deps installs it)";
  EXPECT_TRUE(none->empty()) << ::testing::PrintToString(*none);
  auto bad = test::sarif_schema_violations(json{
      {"version", "2.0.0"}, {"runs", {{{"tool", {{"driver", {{"name", "x"}}}}}, {"results", {{{"kind", "bogus"}}}}}}}});
  ASSERT_TRUE(bad);
  EXPECT_GE(bad->size(), 3u) << ::testing::PrintToString(*bad);  // version, the result's kind and its message
}

TEST(SarifValidator, CatchesWhatGithubRefuses) {
  json bad = {
      {"version", "2.1.0"},
      {"runs",
       {{{"tool", {{"driver", {{"name", "x"}, {"rules", {{{"id", "r"}}}}}}}},
         {"results",
          {{{"ruleId", "r"},
            {"message", {{"text", "m"}}},
            {"locations",
             {{{"physicalLocation",
                {{"artifactLocation", {{"uri", "file://cuda/lib/a b"}}}, {"region", {{"startLine", 1}}}}}}}}}}}}}}};
  auto violations = github_sarif_violations(bad);
  ASSERT_EQ(violations.size(), 3u) << ::testing::PrintToString(violations);
  EXPECT_NE(violations[0].find("not an RFC 3986 URI"), std::string::npos);
  EXPECT_NE(violations[1].find("absolute file:///"), std::string::npos);  // "cuda" would be a host
  EXPECT_NE(violations[2].find("region/startLine"), std::string::npos);
  bad["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] = "file://cuda/lib";
  EXPECT_NE(github_sarif_violations(bad)[0].find("absolute file:///"), std::string::npos);
  EXPECT_EQ(github_sarif_violations({{"version", "2.0.0"}}).size(), 2u);
}

TEST(Sarif, RelativePathsUseSrcrootAbsoluteOnesArePercentEncodedFileUris) {
  CheckReport report;
  report.findings = {{CheckRule::StubsEntry, Severity::Error, "cuda/lib/libcudart.so.13", "m1"},
                     {CheckRule::StubsEntry, Severity::Warning, "./rel dir/a:b#c", "m2"},
                     {CheckRule::StubsEntry, Severity::Info, "/abs/sp ace/#h%/\xC3\xBC/lib.so", "m3"}};
  json sarif = check_sarif(report, "test");
  EXPECT_TRUE(sarif_violations(sarif).empty()) << ::testing::PrintToString(sarif_violations(sarif));
  const json& results = sarif["runs"][0]["results"];
  auto artifact = [&](size_t i) { return results[i]["locations"][0]["physicalLocation"]["artifactLocation"]; };
  EXPECT_EQ(artifact(0), json({{"uri", "cuda/lib/libcudart.so.13"}, {"uriBaseId", "%SRCROOT%"}}));
  EXPECT_EQ(artifact(1), json({{"uri", "rel%20dir/a%3Ab%23c"}, {"uriBaseId", "%SRCROOT%"}}));
  EXPECT_EQ(artifact(2), json({{"uri", "file:///abs/sp%20ace/%23h%25/%C3%BC/lib.so"}}));
}

// A relative path outside the working directory is no place under %SRCROOT%:
// an absolute URI names it. Two findings of one rule on one file differ in
// their fingerprints; the same finding has the same one in every run.
TEST(Sarif, OutsideTheRootIsAbsoluteAndFingerprintsTellFindingsApart) {
  CheckReport report;
  Finding g1{CheckRule::UnresolvedNeeded, Severity::Error, "bin/prog", "libg1.so is not found", "libg1.so"};
  Finding g2{CheckRule::UnresolvedNeeded, Severity::Error, "bin/prog", "libg2.so is not found", "libg2.so"};
  report.findings = {g1, g2, {CheckRule::StubsEntry, Severity::Error, "../bad/lib.so", "m"}};
  json sarif = check_sarif(report, "test");
  EXPECT_TRUE(sarif_violations(sarif).empty()) << ::testing::PrintToString(sarif_violations(sarif));
  const json& results = sarif["runs"][0]["results"];
  std::string outside = results[2]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"];
  EXPECT_EQ(outside, "file://" + (fs::current_path().parent_path() / "bad/lib.so").string());
  EXPECT_FALSE(results[2]["locations"][0]["physicalLocation"]["artifactLocation"].contains("uriBaseId"));
  auto fingerprint = [&](size_t i) { return results[i]["partialFingerprints"]["runpatchFinding/v1"]; };
  EXPECT_NE(fingerprint(0), fingerprint(1));
  EXPECT_EQ(fingerprint(0),
            check_sarif(report, "test")["runs"][0]["results"][0]["partialFingerprints"]["runpatchFinding/v1"]);
}

TEST(Sarif, CheckCommandWritesAValidLogForOddNames) {
  fs::path root = fs::absolute(test::scratch_dir("sarif/odd names #%"));
  fs::create_directories(root / "sp ace");
  fs::copy_file(test::fixture_arches().at(0).dir / "prog-norunpath", root / "sp ace/prog #1");
  fs::path log = root / "report.sarif";
  auto r =
      test::run_command({RUNPATCH_CLI, "check", "--ignore-environment", root.string(), "--sarif", log.string()}, true);
  EXPECT_EQ(r.exit_code, 1) << r.output;  // libgreet.so is unresolved
  json sarif = test::parse_json(test::read_file(log));
  auto violations = sarif_violations(sarif);
  EXPECT_TRUE(violations.empty()) << ::testing::PrintToString(violations);
  ASSERT_FALSE(sarif["runs"][0]["results"].empty());
  std::string uri = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"];
  EXPECT_NE(uri.find("/odd%20names%20%23%25/sp%20ace/prog%20%231"), std::string::npos) << uri;
}

// File names are bytes: one that is not UTF-8, or holds a control character
// XML 1.0 cannot carry even as a reference, still gives a well-formed JUnit
// report (xmllint) and a JSON one that parses.
TEST(CheckReports, JunitAndJsonStayWellFormedForNamesThatAreNotText) {
  if (!test::have_program("xmllint")) GTEST_SKIP() << "xmllint (libxml2-utils) checks the XML";
  fs::path root = fs::absolute(test::scratch_dir("sarif/not-text"));
  fs::copy_file(test::fixture_arches().at(0).dir / "prog-norunpath", root / "prog\xff\x01<&>\"'");
  fs::path junit = root / "report.xml";
  auto r = test::run_command({RUNPATCH_CLI, "check", "--ignore-environment", root.string(), "--junit", junit.string()},
                             true);
  EXPECT_EQ(r.exit_code, 1) << r.output;  // libgreet.so is unresolved
  EXPECT_EQ(test::junit_lint_errors(junit).value_or(""), "");
  auto bytes = test::read_file(junit);
  std::string xml(bytes.begin(), bytes.end());
  // Lossless: the bad byte and the control character as \xHH, markup as entities.
  EXPECT_NE(xml.find("prog\\xff\\x01&lt;&amp;&gt;&quot;&apos;"), std::string::npos) << xml;
  auto as_json = test::run_command({RUNPATCH_CLI, "check", "--json", "--ignore-environment", root.string()}, false);
  EXPECT_TRUE(json::accept(as_json.output)) << as_json.output;
}

// Text output goes to terminals and CI logs: a newline in a name must not
// forge a header line, an ESC must not colour the log (ls -b's escapes).
TEST(CheckReports, TextOutputEscapesControlCharacters) {
  EXPECT_EQ(escape_controls("a\nb\tc\x1b[31md\\e\x7f\xff"), "a\\nb\\tc\\x1b[31md\\\\e\\x7f\xff");
  fs::path root = fs::absolute(test::scratch_dir("sarif/controls"));
  fs::path file = root / "prog\nforged.so:\x1b[32m";
  fs::copy_file(test::fixture_arches().at(0).dir / "prog-norunpath", file, fs::copy_options::overwrite_existing);
  for (const char* command : {"check", "print", "scan"}) {
    std::string cmd = command;
    auto r = cmd == "check"   ? test::run_command({RUNPATCH_CLI, "check", "--ignore-environment", root.string()})
             : cmd == "print" ? test::run_command({RUNPATCH_CLI, "print", file.string()})
                              : test::run_command({RUNPATCH_CLI, "scan", root.string()});
    EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << command << "\n" << r.output;
    EXPECT_EQ(r.output.find("\nforged"), std::string::npos) << command << "\n" << r.output;
    EXPECT_NE(r.output.find("prog\\nforged.so:\\x1b[32m"), std::string::npos) << command << "\n" << r.output;
  }
}

// JUnit keeps names apart that differ in a byte that is not text, writes a
// newline or tab in an attribute as a character reference, and carries the
// warnings and notes below --fail-on as system-out.
TEST(CheckReports, JunitIsLosslessAndCarriesEveryFinding) {
  CheckReport report;
  report.files = {"x\xff", "x\xfe", "tab\tname"};
  report.findings = {{CheckRule::UnresolvedNeeded, Severity::Error, "x\xff", "line one\nline two"},
                     {CheckRule::MissingEntry, Severity::Warning, "x\xfe", "'/gone' does not exist"},
                     {CheckRule::UnusedEntry, Severity::Info, "tab\tname", "'/x' resolves nothing"}};
  std::string xml = check_junit(report, Severity::Error);
  EXPECT_NE(xml.find("name=\"x\\xff\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("name=\"x\\xfe\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("name=\"tab&#9;name\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("message=\"line one&#10;line two\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<system-out>warning missing-entry: &apos;/gone&apos; does not exist\n</system-out>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<system-out>info unused-entry: &apos;/x&apos; resolves nothing\n</system-out>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("failures=\"1\""), std::string::npos) << xml;
  fs::path file = test::scratch_dir("sarif/junit-lossless") / "report.xml";
  test::write_file(file, std::vector<uint8_t>(xml.begin(), xml.end()));
  EXPECT_EQ(test::junit_lint_errors(file).value_or(""), "");
}

// A file check cannot read fails the run, and every report says why: an
// unreadable-file finding in text, JSON, SARIF and JUnit alike.
TEST(CheckReports, AnUnreadableFileIsAFindingInEveryFormat) {
  fs::path root = fs::absolute(test::scratch_dir("sarif/unreadable"));
  auto bytes = test::read_file(test::fixture_arches().at(0).dir / "lib/libgreet.so");
  bytes.resize(200);  // the ELF header, then program headers cut short
  test::write_file(root / "libcut.so", bytes);
  fs::path junit = root / "report.xml", sarif = root / "report.sarif";
  auto r = test::run_command({RUNPATCH_CLI, "check", "--ignore-environment", (root / "libcut.so").string(), "--junit",
                              junit.string(), "--sarif", sarif.string()},
                             true);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("unreadable-file"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("libcut.so"), std::string::npos) << r.output;

  auto as_json = test::run_command({RUNPATCH_CLI, "check", "--json", "--ignore-environment", root.string()});
  EXPECT_EQ(as_json.exit_code, 1);
  json report = test::parse_json(as_json.output);
  ASSERT_EQ(report["findings"].size(), 1u) << as_json.output;
  EXPECT_EQ(report["findings"][0]["rule"], "unreadable-file");
  EXPECT_EQ(report["findings"][0]["file"], (root / "libcut.so").string());

  json log = test::parse_json(test::read_file(sarif));
  EXPECT_TRUE(sarif_violations(log).empty()) << ::testing::PrintToString(sarif_violations(log));
  ASSERT_EQ(log["runs"][0]["results"].size(), 1u);
  EXPECT_EQ(log["runs"][0]["results"][0]["ruleId"], "unreadable-file");
  EXPECT_EQ(test::junit_lint_errors(junit).value_or(""), "");
  auto xml_bytes = test::read_file(junit);
  std::string xml(xml_bytes.begin(), xml_bytes.end());
  EXPECT_NE(xml.find("failures=\"1\""), std::string::npos) << xml;
  EXPECT_EQ(xml.find("tests=\"0\""), std::string::npos) << xml;

  // Turned off, the rule leaves nothing to fail on: report and exit code agree.
  auto off = test::run_command(
      {RUNPATCH_CLI, "check", "--json", "--ignore-environment", "--disable", "unreadable-file", root.string()});
  EXPECT_EQ(off.exit_code, 0) << off.output;
  EXPECT_TRUE(test::parse_json(off.output)["findings"].empty()) << off.output;
}

TEST(CheckReports, AReportThatCannotBeWrittenIsOneErrorAndExitTwo) {
  fs::path root = fs::absolute(test::scratch_dir("sarif/unwritable"));
  fs::copy_file(test::fixture_arches().at(0).dir / "lib/libgreet.so", root / "libgreet.so");
  fs::create_directories(root / "a-directory");
  const std::pair<std::string, std::string> cases[] = {
      {"/nonexistent/dir/j.xml", "No such file or directory"},
      {(root / "a-directory").string(), "Is a directory"},
  };
  for (const char* option : {"--junit", "--sarif"}) {
    for (const auto& [path, reason] : cases) {
      auto r = test::run_command({RUNPATCH_CLI, "check", "--ignore-environment", root.string(), option, path}, true);
      EXPECT_EQ(r.exit_code, 2) << option << " " << path << "\n" << r.output;
      EXPECT_EQ(r.output, "runpatch: " + path + ": cannot write: " + reason + "\n") << option;
    }
  }
  // Writable: written, and the exit code is the check's.
  auto ok = test::run_command({RUNPATCH_CLI, "check", "--ignore-environment", root.string(), "--junit",
                               (root / "j.xml").string(), "--sarif", (root / "s.sarif").string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_FALSE(test::read_file(root / "j.xml").empty());
  EXPECT_EQ(test::junit_lint_errors(root / "j.xml").value_or(""), "");
  EXPECT_FALSE(test::read_file(root / "s.sarif").empty());
  if (fs::exists("/dev/full")) {  // a device that is always full: the write itself fails
    auto full =
        test::run_command({RUNPATCH_CLI, "check", "--ignore-environment", root.string(), "--sarif", "/dev/full"}, true);
    EXPECT_EQ(full.exit_code, 2) << full.output;
    EXPECT_NE(full.output.find("runpatch: /dev/full: cannot write: No space left on device"), std::string::npos)
        << full.output;
  }
}

}  // namespace
}  // namespace runpatch
