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
#include "patchelf_args.hpp"
#include "runpatch/runpath_ops.hpp"

namespace {

using namespace runpatch;

using Arguments = runpatch::cli::PatchelfArguments;

[[noreturn]] void fail(const std::string& message) {
  fmt::print(stderr, "patchelf: {}\n", message);
  std::exit(1);
}

void show_help(const char* argv0) {
  fmt::print(stderr,
             "syntax: {} [--set-interpreter FILENAME] [--page-size SIZE] [--print-interpreter] [--print-soname]\n"
             "  [--set-soname SONAME] [--set-rpath RPATH] [--add-rpath RPATH] [--remove-rpath] [--shrink-rpath]\n"
             "  [--allowed-rpath-prefixes PREFIXES] [--print-rpath] [--force-rpath] [--add-needed LIBRARY]\n"
             "  [--build-resolution-cache]\n"
             "  [--remove-needed LIBRARY] [--replace-needed LIBRARY NEW_LIBRARY] [--print-needed] [--output FILE]\n"
             "  [--debug] [--version] FILENAME...\n",
             argv0);
}

Arguments parse(int argc, char** argv) {
  if (argc == 1) {
    show_help(argv[0]);
    std::exit(1);
  }
  auto parsed = runpatch::cli::parse_patchelf_arguments(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed) fail(parsed.error().what);
  if (parsed->help) {
    show_help(argv[0]);
    std::exit(0);
  }
  if (parsed->version) {
    fmt::print("patchelf 0.18.0 (runpatch {})\n", RUNPATCH_VERSION);
    std::exit(0);
  }
  if (parsed->files.empty()) fail("missing filename");
  if (parsed->output && parsed->files.size() > 1) fail("--output option only allowed with single input file");
  return *parsed;
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
  EditRequest request = runpatch::cli::patchelf_request(args);
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
    for (const auto& warning : outcome->warnings) fmt::print(stderr, "warning: {}: {}\n", file, warning);
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
