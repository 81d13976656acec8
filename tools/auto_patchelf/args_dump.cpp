// pprint.pprint(vars(args)): the argument dump every auto-patchelf build log
// starts with. Python's repr of str and PosixPath, and pprint's line breaking
// at 80 columns (a dict's items one per line, a list's items one per line when
// it does not fit, long strings split at whitespace).
#include <fmt/core.h>

#include <variant>

#include "auto_patchelf_args.hpp"
#include "runpatch/autopatchelf/auto_patchelf.hpp"
#include "runpatch/reporting/utf8.hpp"

namespace runpatch::cli {

namespace {

constexpr size_t kWidth = 80;

// Python's repr of a str decoded from argv (surrogateescape): characters as
// they are, a byte that is not UTF-8 as its surrogate escape \udcXX.
std::string repr_str(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos, has_double = s.find('"') != std::string::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (size_t at = 0; at < s.size(); ++at) {
    unsigned char c = static_cast<unsigned char>(s[at]);
    if (c >= 0x80) {
      size_t n = utf8_sequence_length(s, at);
      out += n ? s.substr(at, n) : fmt::format("\\udc{:02x}", c);
      at += n ? n - 1 : 0;
    } else if (c == '\\')
      out += "\\\\";
    else if (c == static_cast<unsigned char>(quote))
      out += std::string("\\") + quote;
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20 || c == 0x7f)
      out += fmt::format("\\x{:02x}", c);
    else
      out += static_cast<char>(c);
  }
  return out + quote;
}

struct Item {
  std::string text;
  bool is_path;
  std::string repr() const { return is_path ? "PosixPath(" + repr_str(python_path_text(text)) + ")" : repr_str(text); }
};
using Value = std::variant<bool, std::vector<Item>>;

std::string repr(const Value& v) {
  if (const bool* b = std::get_if<bool>(&v)) return *b ? "True" : "False";
  std::string out = "[";
  for (const auto& item : std::get<std::vector<Item>>(v)) out += (out.size() > 1 ? ", " : "") + item.repr();
  return out + "]";
}

// pprint's _pprint_str: a string too wide is cut after runs of whitespace.
std::string format_str(const std::string& s, size_t indent, size_t allowance) {
  std::string whole = repr_str(s);
  if (s.empty() || s.find('\n') != std::string::npos || utf8_characters(whole) <= kWidth - indent - allowance)
    return whole;
  std::vector<std::string> parts;
  // Python's re.findall(r"\S*\s*"): a run of non-space, then a run of space.
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  for (size_t at = 0; at < s.size();) {
    size_t end = at;
    while (end < s.size() && !space(s[end])) ++end;
    while (end < s.size() && space(s[end])) ++end;
    parts.push_back(s.substr(at, end - at));
    at = end;
  }
  std::vector<std::string> chunks;
  std::string current;
  for (size_t j = 0; j < parts.size(); ++j) {
    size_t max_width = kWidth - indent - (j + 1 == parts.size() ? allowance : 0);
    std::string candidate = current + parts[j];
    if (utf8_characters(repr_str(candidate)) > max_width) {
      if (!current.empty()) chunks.push_back(repr_str(current));
      current = parts[j];
    } else {
      current = candidate;
    }
  }
  if (!current.empty()) chunks.push_back(repr_str(current));
  if (chunks.size() == 1) return whole;
  std::string out;
  for (size_t i = 0; i < chunks.size(); ++i) out += (i ? "\n" + std::string(indent, ' ') : "") + chunks[i];
  return out;
}

std::string format_value(const Value& v, size_t indent, size_t allowance) {
  std::string rep = repr(v);
  if (utf8_characters(rep) <= kWidth - indent - allowance || std::holds_alternative<bool>(v)) return rep;
  const auto& items = std::get<std::vector<Item>>(v);
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    bool last = i + 1 == items.size();
    if (i) out += ",\n" + std::string(indent + 1, ' ');
    size_t item_allowance = last ? allowance + 1 : 1;
    out += items[i].is_path ? items[i].repr() : format_str(items[i].text, indent + 1, item_allowance);
  }
  return out + "]";
}

std::vector<Item> items(const std::vector<std::string>& values, bool is_path) {
  std::vector<Item> out;
  for (const auto& v : values) out.push_back({v, is_path});
  return out;
}

}  // namespace

std::string auto_patchelf_args_dump(const AutoPatchelfArgs& a) {
  std::vector<std::pair<std::string, Value>> dict = {
      {"add_existing", a.add_existing},
      {"append_rpaths", items(a.append_rpaths, true)},
      {"extra_args", items(a.extra_args, false)},
      {"ignore_missing", items(a.ignore_missing, false)},
      {"keep_libc", a.keep_libc},
      {"libs", items(a.libs, true)},
      {"paths", items(a.paths, true)},
      {"recursive", a.recursive},
      {"runtime_dependencies", items(a.runtime_dependencies, true)},
  };
  if (!a.search_paths.empty()) {
    std::vector<Item> pairs;
    for (const auto& [mode, path] : a.search_paths) pairs.push_back({mode + " " + path, false});
    dict.emplace_back("search_paths", pairs);
  }
  std::string one_line = "{";
  for (const auto& [key, value] : dict)
    one_line += (one_line.size() > 1 ? ", " : "") + repr_str(key) + ": " + repr(value);
  one_line += "}";
  if (utf8_characters(one_line) <= kWidth) return one_line + "\n";
  std::string out = "{";
  for (size_t i = 0; i < dict.size(); ++i) {
    bool last = i + 1 == dict.size();
    std::string key = repr_str(dict[i].first);
    out += key + ": " + format_value(dict[i].second, 1 + utf8_characters(key) + 2, 1);
    if (!last) out += ",\n ";
  }
  return out + "}\n";
}

}  // namespace runpatch::cli
