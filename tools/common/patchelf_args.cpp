#include "patchelf_args.hpp"

#include <algorithm>
#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <sys/stat.h>

#include "runpatch/editing/runpath_ops.hpp"

namespace runpatch::cli {

namespace {

using Flag = bool PatchelfArguments::*;

// Options without a value.
const std::map<std::string, Flag>& flag_options() {
  static const std::map<std::string, Flag> flags = {
      {"--print-interpreter", &PatchelfArguments::print_interpreter},
      {"--print-os-abi", &PatchelfArguments::print_os_abi},
      {"--print-soname", &PatchelfArguments::print_soname},
      {"--remove-rpath", &PatchelfArguments::remove_rpath},
      {"--shrink-rpath", &PatchelfArguments::shrink_rpath},
      {"--print-rpath", &PatchelfArguments::print_rpath},
      {"--force-rpath", &PatchelfArguments::force_rpath},
      {"--print-needed", &PatchelfArguments::print_needed},
      {"--no-sort", &PatchelfArguments::no_sort},
      {"--no-clobber-old-sections", &PatchelfArguments::no_clobber_old_sections},
      {"--print-execstack", &PatchelfArguments::print_execstack},
      {"--clear-execstack", &PatchelfArguments::clear_execstack},
      {"--set-execstack", &PatchelfArguments::set_execstack},
      {"--debug", &PatchelfArguments::debug},
      {"--atomic-copy", &PatchelfArguments::atomic_copy},
      {"--no-default-lib", &PatchelfArguments::no_default_lib},
      {"--add-debug-tag", &PatchelfArguments::add_debug_tag},
      {"--build-resolution-cache", &PatchelfArguments::build_resolution_cache},
      {"--help", &PatchelfArguments::help},
      {"-h", &PatchelfArguments::help},
      {"--version", &PatchelfArguments::version},
  };
  return flags;
}

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
  Expected<std::string> next(bool resolve) {
    if (i_ + 1 >= args_.size()) return make_error(ErrorCode::Usage, "", "missing argument");
    ++i_;
    return resolve ? resolve_value(args_[i_]) : args_[i_];
  }

  Status one(const std::string& arg) {
    if (auto flag = flag_options().find(arg); flag != flag_options().end()) {
      a_.*(flag->second) = true;
      return {};
    }
    if (arg == "--set-interpreter" || arg == "--interpreter") {
      RUNPATCH_TRY(a_.interpreter, next(true));
    } else if (arg == "--set-os-abi") {
      RUNPATCH_TRY(a_.os_abi, next(true));
      if (!osabi_from_name(*a_.os_abi)) return make_error(ErrorCode::Usage, "", "unrecognized OS ABI");
    } else if (arg == "--set-soname") {
      RUNPATCH_TRY(a_.soname, next(true));
    } else if (arg == "--set-rpath") {
      RUNPATCH_TRY(a_.set_rpath, next(true));
    } else if (arg == "--add-rpath") {
      RUNPATCH_TRY(a_.add_rpath, next(true));
    } else if (arg == "--output") {
      RUNPATCH_TRY(a_.output, next(true));
    } else if (arg == "--add-needed" || arg == "--remove-needed" || arg == "--clear-symbol-version") {
      RUNPATCH_TRY(std::string value, next(true));
      auto& list = arg == "--add-needed"      ? a_.add_needed
                   : arg == "--remove-needed" ? a_.remove_needed
                                              : a_.clear_symbol_version;
      list.push_back(std::move(value));
    } else if (arg == "--allowed-rpath-prefixes") {
      RUNPATCH_TRY(std::string value, next(false));
      for (const auto& p : split_runpath(value))
        if (!p.empty()) a_.allowed_prefixes.push_back(p);
    } else if (arg == "--page-size") {
      RUNPATCH_TRY(std::string value, next(false));
      RUNPATCH_TRY(a_.page_size, parse_page_size(value));
    } else if (arg == "--replace-needed") {
      if (i_ + 2 >= args_.size()) return make_error(ErrorCode::Usage, "", "missing argument(s)");
      a_.replace_needed.emplace_back(args_[i_ + 1], args_[i_ + 2]);
      i_ += 2;
    } else if (arg == "--rename-dynamic-symbols") {
      RUNPATCH_TRY(a_.rename_map_file, next(false));
      RUNPATCH_TRY(auto pairs, read_rename_map(*a_.rename_map_file));
      a_.rename_symbols.insert(a_.rename_symbols.end(), pairs.begin(), pairs.end());
    } else if (arg.size() > 1 && arg[0] == '-') {
      return make_error(ErrorCode::Usage, "", "unrecognized option '" + arg + "'");
    } else {
      a_.files.push_back(arg);
    }
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
