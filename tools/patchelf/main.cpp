// runpatch-patchelf: patchelf 0.18's command line over runpatch's editor, so
// that existing hooks can call it as `patchelf`. Argument handling and output
// only; every edit goes through runpatch::edit_elf_file in one pass per file.
#include <fmt/core.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "runpatch/edit.hpp"
#include "runpatch/runpath_ops.hpp"

namespace {

using namespace runpatch;

struct Arguments {
  std::vector<std::string> files;
  std::optional<std::string> set_rpath, add_rpath, output, interpreter, soname;
  bool remove_rpath = false, shrink_rpath = false, force_rpath = false, debug = false;
  bool print_rpath = false, print_needed = false, print_interpreter = false, print_soname = false;
  std::vector<std::string> allowed_prefixes, add_needed, remove_needed;
  std::vector<std::pair<std::string, std::string>> replace_needed;
  std::optional<uint64_t> page_size;
};

[[noreturn]] void fail(const std::string& message) {
  fmt::print(stderr, "patchelf: {}\n", message);
  std::exit(1);
}

void show_help(const char* argv0) {
  fmt::print(stderr,
             "syntax: {} [--set-interpreter FILENAME] [--page-size SIZE] [--print-interpreter] [--print-soname]\n"
             "  [--set-soname SONAME] [--set-rpath RPATH] [--add-rpath RPATH] [--remove-rpath] [--shrink-rpath]\n"
             "  [--allowed-rpath-prefixes PREFIXES] [--print-rpath] [--force-rpath] [--add-needed LIBRARY]\n"
             "  [--remove-needed LIBRARY] [--replace-needed LIBRARY NEW_LIBRARY] [--print-needed] [--output FILE]\n"
             "  [--debug] [--version] FILENAME...\n",
             argv0);
}

std::vector<std::string> split_colons(const std::string& s) {
  std::vector<std::string> parts;
  for (const auto& p : split_runpath(s))
    if (!p.empty()) parts.push_back(p);
  return parts;
}

Arguments parse(int argc, char** argv) {
  Arguments a;
  if (argc == 1) {
    show_help(argv[0]);
    std::exit(1);
  }
  auto value = [&](int& i) -> std::string {
    if (++i == argc) fail(fmt::format("missing argument to '{}'", argv[i - 1]));
    return argv[i];
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--set-interpreter" || arg == "--interpreter") a.interpreter = value(i);
    else if (arg == "--page-size") {
      std::string v = value(i);
      char* end = nullptr;
      unsigned long long size = std::strtoull(v.c_str(), &end, 10);
      if (!end || *end || size == 0 || (size & (size - 1))) fail("invalid argument to --page-size");
      a.page_size = size;
    } else if (arg == "--print-interpreter") a.print_interpreter = true;
    else if (arg == "--print-soname") a.print_soname = true;
    else if (arg == "--set-soname") a.soname = value(i);
    else if (arg == "--remove-rpath") a.remove_rpath = true;
    else if (arg == "--shrink-rpath") a.shrink_rpath = true;
    else if (arg == "--allowed-rpath-prefixes") a.allowed_prefixes = split_colons(value(i));
    else if (arg == "--set-rpath") a.set_rpath = value(i);
    else if (arg == "--add-rpath") a.add_rpath = value(i);
    else if (arg == "--print-rpath") a.print_rpath = true;
    else if (arg == "--force-rpath") a.force_rpath = true;
    else if (arg == "--print-needed") a.print_needed = true;
    else if (arg == "--add-needed") a.add_needed.push_back(value(i));
    else if (arg == "--remove-needed") a.remove_needed.push_back(value(i));
    else if (arg == "--replace-needed") {
      std::string from = value(i);
      a.replace_needed.emplace_back(from, value(i));
    } else if (arg == "--output") a.output = value(i);
    else if (arg == "--debug") a.debug = true;
    else if (arg == "--help" || arg == "-h") {
      show_help(argv[0]);
      std::exit(0);
    } else if (arg == "--version") {
      fmt::print("patchelf 0.18.0 (runpatch {})\n", RUNPATCH_VERSION);
      std::exit(0);
    } else {
      a.files.push_back(arg);  // as patchelf: anything else names a file
    }
  }
  if (a.files.empty()) fail("missing filename");
  if (a.output && a.files.size() > 1) fail("--output option only allowed with single input file");
  return a;
}

EditRequest make_request(const Arguments& a) {
  EditRequest request;
  request.force_rpath = a.force_rpath;
  // patchelf applies one runpath operation, in this precedence.
  if (a.shrink_rpath) request.runpath = shrink_runpath_update(a.allowed_prefixes);
  else if (a.remove_rpath) request.runpath = remove_runpath_update();
  else if (a.set_rpath) request.runpath = set_runpath_update(*a.set_rpath);
  else if (a.add_rpath) request.runpath = add_runpath_update(*a.add_rpath, /*prepend=*/false, /*deduplicate=*/false);
  request.interpreter = a.interpreter;
  request.soname = a.soname;
  request.add_needed = a.add_needed;
  request.remove_needed = a.remove_needed;
  request.replace_needed = a.replace_needed;
  return request;
}

void print_requested(const Arguments& a, const std::string& file) {
  if (!a.print_interpreter && !a.print_soname && !a.print_rpath && !a.print_needed) return;
  auto info = read_elf_info(file);
  if (!info) fail(info.error().message());
  if ((a.print_rpath || a.print_needed) && info->is_static())
    fail(fmt::format("cannot find section '.dynamic'. The input file is most likely statically linked"));
  if (a.print_interpreter) {
    if (!info->interpreter) fail("cannot find section '.interp'. The input file is most likely statically linked");
    fmt::print("{}\n", *info->interpreter);
  }
  if (a.print_soname && info->soname) fmt::print("{}\n", *info->soname);  // none: prints nothing, as patchelf
  if (a.print_rpath) fmt::print("{}\n", effective_runpath(*info));
  if (a.print_needed)
    for (const auto& n : info->needed) fmt::print("{}\n", n);
}

}  // namespace

int main(int argc, char** argv) {
  Arguments args = parse(argc, argv);
  EditRequest request = make_request(args);
  for (const auto& file : args.files) {
    std::error_code ec;
    if (!std::filesystem::exists(file, ec))
      fail(fmt::format("getting info about '{}': {}", file, std::strerror(ENOENT)));
    print_requested(args, file);
    if (request.empty()) continue;
    EditOptions options;
    options.output = args.output ? std::optional<std::filesystem::path>(*args.output) : std::nullopt;
    options.page_size = args.page_size;
    auto outcome = edit_elf_file(file, request, options);
    if (!outcome) fail(outcome.error().message());
    if (args.debug)
      fmt::print(stderr, "patching ELF file '{}': {} ({})\n", file, strategy_name(outcome->strategy),
                 outcome->layout_note);
  }
  if (request.empty() && args.output) {
    // patchelf writes the output even when nothing changes.
    auto outcome = edit_elf_file(args.files[0], request, EditOptions{args.output, args.page_size, false});
    if (!outcome) fail(outcome.error().message());
  }
  return 0;
}
