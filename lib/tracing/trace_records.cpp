// The audit library's record lines (audit/trace_protocol.h: the format).
#include "runpatch/tracing/trace_records.hpp"

#include <charconv>

#include "audit/trace_protocol.h"

namespace runpatch {

std::string search_step_name(SearchStep step) {
  switch (step) {
    case SearchStep::Original: return "as asked";
    case SearchStep::LdLibraryPath: return "LD_LIBRARY_PATH";
    case SearchStep::Runpath: return "rpath/runpath";
    case SearchStep::Cache: return "ld.so.cache";
    case SearchStep::Default: return "default directory";
    case SearchStep::Secure: return "secure directory";
  }
  return "search step " + std::to_string(unsigned(step));
}

std::string search_step_id(SearchStep step) {
  switch (step) {
    case SearchStep::Original: return "original";
    case SearchStep::LdLibraryPath: return "ld_library_path";
    case SearchStep::Runpath: return "runpath";
    case SearchStep::Cache: return "cache";
    case SearchStep::Default: return "default";
    case SearchStep::Secure: return "secure";
  }
  return std::to_string(unsigned(step));
}

namespace {

// A line's tab-separated fields, escapes undone.
std::vector<std::string> split_fields(std::string_view line) {
  std::vector<std::string> fields(1);
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c == RUNPATCH_FIELD_SEPARATOR) {
      fields.emplace_back();
    } else if (c == RUNPATCH_ESCAPE && i + 1 < line.size()) {
      fields.back().push_back(runpatch_unescaped(line[++i]));
    } else {
      fields.back().push_back(c);
    }
  }
  return fields;
}

template <class T>
bool parse_number(const std::string& text, T& value) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

// One line; false when its kind or field count is not the audit library's.
bool parse_record(const std::vector<std::string>& f, TraceRecord& r) {
  if (f.size() < 2 || f[0].size() != 1 || !parse_number(f[1], r.pid)) return false;
  switch (f[0][0]) {
    case RUNPATCH_RECORD_PROCESS:
    case RUNPATCH_RECORD_FORK:
      r.kind = TraceRecord::Kind::Process;
      r.forked = f[0][0] == RUNPATCH_RECORD_FORK;
      if (f.size() != RUNPATCH_PROCESS_FIELDS) return false;
      r.name = f[3];
      return parse_number(f[2], r.parent);
    case RUNPATCH_RECORD_SEARCH:
      r.kind = TraceRecord::Kind::Search;
      if (f.size() != RUNPATCH_SEARCH_FIELDS) return false;
      r.requester = f[3], r.name = f[4];
      return parse_number(f[2], r.flag);
    case RUNPATCH_RECORD_OPEN:
      r.kind = TraceRecord::Kind::Open;
      if (f.size() != RUNPATCH_OPEN_FIELDS) return false;
      r.name = f[3];
      return parse_number(f[2], r.lmid);
    case RUNPATCH_RECORD_ACTIVITY:
      r.kind = TraceRecord::Kind::Activity;
      return f.size() == RUNPATCH_ACTIVITY_FIELDS && parse_number(f[2], r.flag);
  }
  return false;
}

}  // namespace

Expected<std::vector<TraceRecord>> parse_trace_records(std::string_view text) {
  std::vector<TraceRecord> records;
  size_t line_number = 0;
  while (!text.empty()) {
    size_t end = text.find(RUNPATCH_RECORD_END);
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++line_number;
    if (line.empty()) continue;
    TraceRecord record;
    bool parsed = parse_record(split_fields(line), record);
    // A last line without its end: a process killed in its write, or the
    // file read while one was written. Not the audit library's mistake.
    if (!parsed && end == std::string_view::npos) break;
    if (!parsed)
      return make_error(
          ErrorCode::Malformed, "trace records",
          "line " + std::to_string(line_number) + " is not an audit record: " + std::string(line.substr(0, 200)));
    records.push_back(std::move(record));
  }
  return records;
}

}  // namespace runpatch
