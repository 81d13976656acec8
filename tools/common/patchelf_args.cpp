#include "patchelf_args.hpp"

#include <algorithm>
#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <sys/stat.h>

#include "runpatch/editing/runpath_ops.hpp"

namespace runpatch::cli {

namespace {

// patchelf's message for a file it cannot read: what it did, then strerror.
Error file_error(const std::string& doing, int err) {
  return make_error(ErrorCode::SystemCall, "", doing + ": " + std::strerror(err));
}

// The value of an option patchelf resolves: "@path" stands for the file's whole contents.
Expected<std::string> resolve_value(const std::string& word) {
  if (word.empty() || word[0] != '@') return word;
  std::string path = word.substr(1);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return file_error("getting info about '" + path + "'", errno);
  std::ifstream in(path, std::ios::binary);
  if (!in) return file_error("opening '" + path + "'", errno ? errno : EACCES);
  std::string contents((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return file_error("reading '" + path + "'", errno ? errno : EIO);
  return contents;
}

Expected<uint64_t> parse_page_size(const std::string& word) {
  char* end = nullptr;
  errno = 0;
  unsigned long long size = std::strtoull(word.c_str(), &end, 10);
  // patchelf takes any positive number; a page size that is no power of two would misalign segments.
  if (errno || word.empty() || *end || size == 0 || (size & (size - 1)))
    return make_error(ErrorCode::Usage, "", "invalid argument to --page-size");
  return uint64_t(size);
}

// What an option takes after its name.
enum class Takes {
  Nothing,
  Value,      // one word, "@file" standing for the file's contents (patchelf's resolution)
  RawValue,   // one word, as it is
  TwoValues,  // two words, as they are
};

using Store = std::function<Status(PatchelfArguments&, std::vector<std::string>)>;

// One row per option: its names, what it takes, the line --help prints for it
// (nullptr: not listed), where its value goes and what a shell completes it
// as. Parsing, --help and the shell completions read it.
struct PatchelfOption {
  std::vector<std::string_view> names;
  Takes takes;
  const char* help;
  Store store;
  Completes completes = kNoValue;
};

Store set(bool PatchelfArguments::*flag) {
  return [flag](PatchelfArguments& a, std::vector<std::string>) -> Status {
    a.*flag = true;
    return {};
  };
}
Store keep(std::optional<std::string> PatchelfArguments::*field) {
  return [field](PatchelfArguments& a, std::vector<std::string> v) -> Status {
    a.*field = std::move(v[0]);
    return {};
  };
}
Store append(std::vector<std::string> PatchelfArguments::*list) {
  return [list](PatchelfArguments& a, std::vector<std::string> v) -> Status {
    (a.*list).push_back(std::move(v[0]));
    return {};
  };
}

using P = PatchelfArguments;
using V = std::vector<std::string>;

// --set-os-abi: a name the parser knows, or a usage error.
Status set_os_abi(P& a, V v) {
  if (!osabi_from_name(v[0])) return make_error(ErrorCode::Usage, "", "unrecognized OS ABI");
  a.os_abi = std::move(v[0]);
  return {};
}
// --rename-dynamic-symbols: the map file is read as the option is met, as patchelf reads it.
Status rename_from_map(P& a, V v) {
  a.rename_map_file = v[0];
  RUNPATCH_TRY(auto pairs, read_rename_map(v[0]));
  a.rename_symbols.insert(a.rename_symbols.end(), pairs.begin(), pairs.end());
  return {};
}

// In the order of patchelf 0.19's --help.
const std::vector<PatchelfOption>& patchelf_options() {
  static const std::vector<PatchelfOption> table = {
      {{"--set-interpreter", "--interpreter"},
       Takes::Value,
       "[--set-interpreter FILENAME]\t(or --interpreter FILENAME)",
       keep(&P::interpreter),
       kFile},
      {{"--page-size"},
       Takes::RawValue,
       "[--page-size SIZE]",
       [](P& a, V v) -> Status {
         RUNPATCH_TRY(a.page_size, parse_page_size(v[0]));
         return {};
       },
       kText},
      {{"--print-interpreter"}, Takes::Nothing, "[--print-interpreter]", set(&P::print_interpreter)},
      {{"--print-os-abi"},
       Takes::Nothing,
       "[--print-os-abi]\t\tPrints 'EI_OSABI' field of ELF header",
       set(&P::print_os_abi)},
      {{"--set-os-abi"},
       Takes::Value,
       "[--set-os-abi ABI]\t\tSets 'EI_OSABI' field of ELF header to ABI.",
       set_os_abi,
       one_of(osabi_one_word_names)},
      {{"--print-soname"},
       Takes::Nothing,
       "[--print-soname]\t\tPrints 'DT_SONAME' entry of .dynamic section.",
       set(&P::print_soname)},
      {{"--set-soname"},
       Takes::Value,
       "[--set-soname SONAME]\t\tSets 'DT_SONAME' entry to SONAME.",
       keep(&P::soname),
       kText},
      {{"--set-rpath"}, Takes::Value, "[--set-rpath RPATH]", keep(&P::set_rpath), kText},
      {{"--add-rpath"}, Takes::Value, "[--add-rpath RPATH]", keep(&P::add_rpath), kText},
      {{"--remove-rpath"}, Takes::Nothing, "[--remove-rpath]", set(&P::remove_rpath)},
      {{"--shrink-rpath"}, Takes::Nothing, "[--shrink-rpath]", set(&P::shrink_rpath)},
      {{"--allowed-rpath-prefixes"},
       Takes::RawValue,
       "[--allowed-rpath-prefixes PREFIXES]\t\tWith '--shrink-rpath', keep only entries with one of these prefixes",
       [](P& a, V v) -> Status {
         for (const auto& prefix : split_runpath(v[0]))
           if (!prefix.empty()) a.allowed_prefixes.push_back(prefix);
         return {};
       },
       repeatable(kText)},
      {{"--print-rpath"}, Takes::Nothing, "[--print-rpath]", set(&P::print_rpath)},
      {{"--force-rpath"}, Takes::Nothing, "[--force-rpath]", set(&P::force_rpath)},
      {{"--add-needed"}, Takes::Value, "[--add-needed LIBRARY]", append(&P::add_needed), repeatable(kText)},
      {{"--remove-needed"}, Takes::Value, "[--remove-needed LIBRARY]", append(&P::remove_needed), repeatable(kText)},
      {{"--replace-needed"},
       Takes::TwoValues,
       "[--replace-needed LIBRARY NEW_LIBRARY]",
       [](P& a, V v) -> Status {
         a.replace_needed.emplace_back(std::move(v[0]), std::move(v[1]));
         return {};
       },
       repeatable(kText)},
      {{"--print-needed"}, Takes::Nothing, "[--print-needed]", set(&P::print_needed)},
      {{"--no-default-lib"}, Takes::Nothing, "[--no-default-lib]", set(&P::no_default_lib)},
      {{"--no-sort"}, Takes::Nothing, "[--no-sort]\t\tAccepted; runpatch never reorders headers", set(&P::no_sort)},
      {{"--clear-symbol-version"},
       Takes::Value,
       "[--clear-symbol-version SYMBOL]",
       append(&P::clear_symbol_version),
       repeatable(kText)},
      {{"--add-debug-tag"}, Takes::Nothing, "[--add-debug-tag]", set(&P::add_debug_tag)},
      {{"--print-execstack"},
       Takes::Nothing,
       "[--print-execstack]\t\tPrints whether the object requests an executable stack",
       set(&P::print_execstack)},
      {{"--clear-execstack"}, Takes::Nothing, "[--clear-execstack]", set(&P::clear_execstack)},
      {{"--set-execstack"}, Takes::Nothing, "[--set-execstack]", set(&P::set_execstack)},
      {{"--rename-dynamic-symbols"},
       Takes::RawValue,
       "[--rename-dynamic-symbols NAME_MAP_FILE]\tRenames dynamic symbols: one 'OLD NEW' pair a line",
       rename_from_map,
       repeatable(kFile)},
      {{"--no-clobber-old-sections"},
       Takes::Nothing,
       "[--no-clobber-old-sections]\tAccepted; runpatch never overwrites moved sections",
       set(&P::no_clobber_old_sections)},
      {{"--build-resolution-cache"}, Takes::Nothing, "[--build-resolution-cache]", set(&P::build_resolution_cache)},
      {{"--atomic-copy"},
       Takes::Nothing,
       "[--atomic-copy]\t\tAlways replace the file with an edited copy",
       set(&P::atomic_copy)},
      {{"--output"}, Takes::Value, "[--output FILE]", keep(&P::output), kFile},
      {{"--debug"}, Takes::Nothing, "[--debug]", set(&P::debug)},
      {{"--version"}, Takes::Nothing, "[--version]", set(&P::version)},
      {{"--help", "-h"}, Takes::Nothing, "[--help]", set(&P::help)},
  };
  return table;
}

const PatchelfOption* find_option(const std::string& word) {
  for (const auto& option : patchelf_options())
    if (std::find(option.names.begin(), option.names.end(), word) != option.names.end()) return &option;
  return nullptr;
}

class Parser {
 public:
  explicit Parser(const std::vector<std::string>& args) : args_(args) {}

  Expected<PatchelfArguments> run() {
    for (i_ = 0; i_ < args_.size(); ++i_) {
      RUNPATCH_CHECK(one(args_[i_]));
      // patchelf answers these as it meets them: later words and checks never run.
      if (a_.help || a_.version) return std::move(a_);
    }
    if (a_.set_rpath && a_.add_rpath)
      return make_error(ErrorCode::Usage, "", "--set-rpath option not allowed with --add-rpath");
    // patchelf 0.19: the note is for DT_RUNPATH searches, which DT_RPATH does not take.
    if (a_.build_resolution_cache && a_.force_rpath)
      return make_error(ErrorCode::Usage, "", "--build-resolution-cache cannot be combined with --force-rpath");
    return std::move(a_);
  }

 private:
  // The words an option takes after it, in patchelf's words when they are missing.
  Expected<std::vector<std::string>> values(Takes takes) {
    switch (takes) {
      case Takes::Nothing: return std::vector<std::string>{};
      case Takes::TwoValues:
        if (i_ + 2 >= args_.size()) return make_error(ErrorCode::Usage, "", "missing argument(s)");
        i_ += 2;
        return std::vector<std::string>{args_[i_ - 1], args_[i_]};
      case Takes::Value:
      case Takes::RawValue: break;
    }
    if (i_ + 1 >= args_.size()) return make_error(ErrorCode::Usage, "", "missing argument");
    ++i_;
    if (takes == Takes::RawValue) return std::vector<std::string>{args_[i_]};
    RUNPATCH_TRY(std::string value, resolve_value(args_[i_]));
    return std::vector<std::string>{std::move(value)};
  }

  Status one(const std::string& arg) {
    if (const PatchelfOption* option = find_option(arg)) {
      RUNPATCH_TRY(auto words, values(option->takes));
      return option->store(a_, std::move(words));
    }
    if (arg.size() > 1 && arg[0] == '-') return make_error(ErrorCode::Usage, "", "unrecognized option '" + arg + "'");
    a_.files.push_back(arg);
    return {};
  }

  const std::vector<std::string>& args_;
  size_t i_ = 0;
  PatchelfArguments a_;
};

}  // namespace

// Pairs "old new" per line; reading stops at the first line without a word, as in patchelf.
Expected<std::vector<std::pair<std::string, std::string>>> read_rename_map(const std::string& path) {
  std::ifstream in(path);
  if (!in) return file_error("Cannot open map file " + path, errno ? errno : ENOENT);
  std::vector<std::pair<std::string, std::string>> pairs;
  std::set<std::string> seen;
  std::string line, from, to;
  for (size_t number = 1; std::getline(in, line); ++number) {
    std::istringstream words(line);
    if (!(words >> from)) break;
    if (!(words >> to))
      return make_error(ErrorCode::Usage, "",
                        fmt::format("{}:{}: Map file line is missing the second element", path, number));
    if (!seen.insert(from).second)
      return make_error(ErrorCode::Usage, "",
                        fmt::format("{}:{}: Name '{}' appears twice in the map file", path, number, from));
    if (from.find('@') != std::string::npos || to.find('@') != std::string::npos)
      return make_error(ErrorCode::Usage, "",
                        fmt::format("{}:{}: Name pair contains version tag: {} {}", path, number, from, to));
    pairs.emplace_back(from, to);
  }
  return pairs;
}

Expected<PatchelfArguments> parse_patchelf_arguments(const std::vector<std::string>& args) {
  return Parser(args).run();
}

std::string patchelf_options_help() {
  std::string out;
  for (const auto& option : patchelf_options())
    if (option.help) out += std::string("  ") + option.help + "\n";
  return out;
}

std::vector<OptionCompletion> patchelf_option_completions() {
  std::vector<OptionCompletion> out;
  for (const auto& option : patchelf_options()) {
    OptionCompletion& c = out.emplace_back();
    c.names.assign(option.names.begin(), option.names.end());
    switch (option.takes) {
      case Takes::Nothing: c.values = OptionCompletion::Values::None; break;
      case Takes::Value:
      case Takes::RawValue: c.values = OptionCompletion::Values::One; break;
      case Takes::TwoValues: c.values = OptionCompletion::Values::Two; break;
    }
    c.completes = option.completes;
    // The help line is "[--name WORD...]<tabs>what it does": the metavars, then the text.
    std::string_view line = option.help ? option.help : "";
    size_t close = line.find(']');
    std::istringstream words(std::string(line.substr(0, close)));
    for (std::string word; words >> word;)
      if (!word.starts_with("[")) c.metavars.push_back(word);
    if (close != std::string_view::npos) {
      size_t text = line.find_first_not_of("\t ", close + 1);
      if (text != std::string_view::npos) c.help = line.substr(text);
    }
  }
  return out;
}

EditRequest patchelf_request(const PatchelfArguments& a) {
  EditRequest request;
  request.force_rpath = a.force_rpath;
  // patchelf applies one runpath operation, in this precedence.
  if (a.shrink_rpath)
    request.runpath = shrink_runpath_update(a.allowed_prefixes);
  else if (a.remove_rpath)
    request.runpath = remove_runpath_update();
  else if (a.set_rpath)
    request.runpath = set_runpath_update(*a.set_rpath);
  else if (a.add_rpath)
    request.runpath = add_runpath_update(*a.add_rpath, /*prepend=*/false, /*deduplicate=*/false);
  // patchelf leaves the interpreter alone when given an empty one.
  if (a.interpreter && !a.interpreter->empty()) request.interpreter = a.interpreter;
  request.soname = a.soname;
  // patchelf keeps them in a std::set: sorted, each once, and added even where already needed.
  request.add_needed = a.add_needed;
  std::sort(request.add_needed.begin(), request.add_needed.end());
  request.add_needed.erase(std::unique(request.add_needed.begin(), request.add_needed.end()), request.add_needed.end());
  request.add_needed_even_if_present = true;
  request.remove_needed = a.remove_needed;
  request.replace_needed = a.replace_needed;
  request.rename_symbols = a.rename_symbols;
  // patchelf drops a note with any change of DT_NEEDED or the runpath, and builds one only once.
  request.resolution_cache =
      a.build_resolution_cache ? ResolutionCacheMode::WriteOnce : ResolutionCacheMode::DropOnChange;
  return request;
}

HeaderEditRequest patchelf_header_request(const PatchelfArguments& a) {
  HeaderEditRequest request;
  if (a.os_abi) request.osabi = osabi_from_name(*a.os_abi);
  // patchelf: --print-execstack wins over --clear-execstack, which wins over --set-execstack.
  if (!a.print_execstack) {
    if (a.clear_execstack)
      request.exec_stack = false;
    else if (a.set_execstack)
      request.exec_stack = true;
  }
  request.no_default_lib = a.no_default_lib;
  request.add_debug_tag = a.add_debug_tag;
  request.clear_symbol_version = a.clear_symbol_version;
  // patchelf clears versions before it renames; these edits run after the rename, so they name the new names.
  for (auto& name : request.clear_symbol_version)
    for (const auto& [from, to] : a.rename_symbols)
      if (name == from) {
        name = to;
        break;
      }
  return request;
}

}  // namespace runpatch::cli
