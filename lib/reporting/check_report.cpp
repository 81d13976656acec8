#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "runpatch/reporting/tree_report.hpp"
#include "runpatch/reporting/check_report.hpp"
#include "runpatch/reporting/utf8.hpp"

namespace runpatch {

namespace {

// Text for XML 1.0, markup characters as entities, lossless: a byte that is
// not UTF-8, or a control character XML cannot carry even as a reference,
// becomes \xHH and the backslash \\ (names that differ in such a byte stay
// apart: x\xff and x\xfe). In an attribute, newline, tab and carriage return
// become character references, which attribute-value normalization would
// otherwise turn into spaces.
std::string xml_escape(const std::string& text, bool attribute = false) {
  std::string out;
  for (size_t at = 0; at < text.size();) {
    char c = text[at];
    auto byte = static_cast<unsigned char>(c);
    size_t n = utf8_sequence_length(text, at);
    if (n == 0 || (byte < 0x20 && c != '\n' && c != '\t' && c != '\r') || byte == 0x7f) {
      append_byte_escape(out, byte);
      ++at;
      continue;
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += attribute ? "&#10;" : "\n"; break;
      case '\t': out += attribute ? "&#9;" : "\t"; break;
      case '\r': out += attribute ? "&#13;" : "\r"; break;
      default: out.append(text, at, n);
    }
    at += n;
  }
  return out;
}

// RFC 3986 percent-encoding of a path's bytes: only unreserved characters and
// the '/' separators stay as they are, so spaces, '#', '%', ':' (which may not
// start a relative reference) and bytes of any encoding all survive the trip.
std::string percent_encode_path(std::string_view path) {
  std::string out;
  for (char c : path) {
    auto byte = static_cast<unsigned char>(c);
    bool keep = (byte >= 'A' && byte <= 'Z') || (byte >= 'a' && byte <= 'z') || (byte >= '0' && byte <= '9') ||
                c == '-' || c == '.' || c == '_' || c == '~' || c == '/';
    if (keep)
      out += c;
    else
      out += fmt::format("%{:02X}", byte);
  }
  return out;
}

// A relative path becomes a relative reference to the directory check ran in
// (%SRCROOT%, which GitHub code scanning takes as the checkout); an absolute
// one a file:/// URI (RFC 8089). "file://" + a relative path would name a host.
nlohmann::json sarif_artifact_location(const std::string& file) {
  std::filesystem::path path = std::filesystem::path(file).lexically_normal();
  // "../x" would name a file outside %SRCROOT%: an absolute URI says where it is.
  if (!path.is_absolute() && path.begin() != path.end() && *path.begin() == "..")
    path = std::filesystem::absolute(path).lexically_normal();
  if (path.is_absolute()) return {{"uri", "file://" + percent_encode_path(path.string())}};
  return {{"uri", percent_encode_path(path.string())}, {"uriBaseId", "%SRCROOT%"}};
}

// A stable fingerprint of a result (FNV-1a over rule, file and subject): two
// findings of one rule on one file (libg1 and libg2 unresolved) stay apart for
// a code-scanning service, and the same finding matches across runs.
std::string sarif_fingerprint(const Finding& f) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const std::string& part : {std::string(f.rule_id()), f.file, f.library, f.requester, f.message}) {
    for (unsigned char c : part) hash = (hash ^ c) * 0x100000001b3ull;
    hash = (hash ^ 0xff) * 0x100000001b3ull;  // a separator no text byte sequence forges
  }
  return fmt::format("{:016x}", hash);
}

std::map<std::string, std::vector<const Finding*>> by_file(const CheckReport& report) {
  std::map<std::string, std::vector<const Finding*>> files;
  for (const auto& f : report.findings) files[f.file].push_back(&f);
  return files;
}

}  // namespace

std::string format_check_text(const CheckReport& report, bool color, bool summary) {
  auto paint = [&](Severity s) -> std::pair<const char*, const char*> {
    if (!color) return {"", ""};
    return {s == Severity::Error ? "\033[1;31m" : s == Severity::Warning ? "\033[1;33m" : "\033[36m", "\033[0m"};
  };
  std::string out;
  size_t counts[3] = {0, 0, 0};
  std::string current;
  for (const auto& f : report.findings) {
    if (f.file != current) {
      current = f.file;
      out += escape_controls(f.file) + ":\n";  // a newline in a name must not forge a header line
    }
    auto [on, off] = paint(f.severity);
    out += fmt::format("  {}{:<7}{} {:<20} {}\n", on, severity_name(f.severity), off, f.rule_id(),
                       escape_controls(f.message));
    ++counts[static_cast<int>(f.severity)];
  }
  if (summary)
    out += fmt::format("{} files checked: {} errors, {} warnings, {} notes\n", report.files.size(), counts[2],
                       counts[1], counts[0]);
  return out;
}

nlohmann::json check_json(const CheckReport& report) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : report.findings)
    findings.push_back(
        {{"rule", f.rule_id()}, {"severity", severity_name(f.severity)}, {"file", f.file}, {"message", f.message}});
  nlohmann::json loaders = nlohmann::json::object();
  for (const auto& [file, model] : report.loaders) loaders[file] = loader_model_json(model);
  return {{"files_checked", report.files.size()}, {"loaders", loaders}, {"findings", findings}};
}

std::string check_junit(const CheckReport& report, Severity fail_on) {
  auto files = by_file(report);
  size_t failures = 0;
  std::string cases;
  auto lines = [](const std::vector<const Finding*>& findings) {
    std::string text;
    for (const auto* f : findings)
      text += fmt::format("{} {}: {}\n", severity_name(f->severity), f->rule_id(), f->message);
    return xml_escape(text);
  };
  for (const auto& file : report.files) {
    std::vector<const Finding*> failing, below;  // below --fail-on: warnings and notes, reported all the same
    if (auto it = files.find(file); it != files.end())
      for (const auto* f : it->second) (f->severity >= fail_on ? failing : below).push_back(f);
    cases += fmt::format("    <testcase classname=\"runpatch.check\" name=\"{}\">", xml_escape(file, true));
    if (!failing.empty()) {
      ++failures;
      cases += fmt::format("\n      <failure type=\"{}\" message=\"{}\">{}</failure>",
                           xml_escape(std::string(failing[0]->rule_id()), true), xml_escape(failing[0]->message, true),
                           lines(failing));
    }
    if (!below.empty()) cases += fmt::format("\n      <system-out>{}</system-out>", lines(below));
    if (!failing.empty() || !below.empty()) cases += "\n    ";
    cases += "</testcase>\n";
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<testsuites name=\"runpatch check\" tests=\"{0}\" failures=\"{1}\" errors=\"0\">\n"
      "  <testsuite name=\"runpatch check\" tests=\"{0}\" failures=\"{1}\" errors=\"0\" skipped=\"0\">\n{2}"
      "  </testsuite>\n</testsuites>\n",
      report.files.size(), failures, cases);
}

nlohmann::json check_sarif(const CheckReport& report, const std::string& version) {
  auto level = [](Severity s) { return s == Severity::Error ? "error" : s == Severity::Warning ? "warning" : "note"; };
  nlohmann::json rules = nlohmann::json::array();
  for (const auto& r : check_rules())
    rules.push_back({{"id", std::string(r.id)},
                     {"shortDescription", {{"text", std::string(r.summary)}}},
                     {"defaultConfiguration", {{"level", level(r.severity)}}}});
  nlohmann::json results = nlohmann::json::array();
  for (const auto& f : report.findings)
    results.push_back(
        {{"ruleId", f.rule_id()},
         {"level", level(f.severity)},
         {"message", {{"text", f.message}}},
         {"partialFingerprints", {{"runpatchFinding/v1", sarif_fingerprint(f)}}},
         // A binary file has no lines: SARIF 2.1.0 (3.30.1) forbids a text region
         // on it, and the finding is about the whole file, so there is none.
         {"locations", {{{"physicalLocation", {{"artifactLocation", sarif_artifact_location(f.file)}}}}}}});
  return {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
          {"version", "2.1.0"},
          {"runs",
           {{{"tool", {{"driver", {{"name", "runpatch"}, {"version", version}, {"rules", rules}}}}},
             {"results", results}}}}};
}

std::string format_findings(const std::vector<Finding>& findings) {
  std::string out;
  for (const auto& f : findings) out += fmt::format("{} {}: {}\n", severity_name(f.severity), f.rule_id(), f.message);
  return out;
}

nlohmann::json findings_json(const std::vector<Finding>& findings) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : findings)
    out.push_back({{"rule", f.rule_id()}, {"severity", severity_name(f.severity)}, {"message", f.message}});
  return out;
}

}  // namespace runpatch
