// runpatch auto-patchelf (also installed as `auto-patchelf`): the command line
// and messages of Nixpkgs' auto-patchelf.py.
#include <fmt/core.h>

#include <cstdlib>
#include <fstream>

#include "../patchelf/patchelf_args.hpp"
#include "command.hpp"
#include "runpatch/auto_patchelf.hpp"

namespace runpatch::cli {

namespace {

std::optional<std::string> first_line(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}

}  // namespace

std::vector<std::string>& auto_patchelf_extra_args() {
  static std::vector<std::string> args;
  return args;
}

Command add_auto_patchelf_command(CLI::App& root) {
  struct Options {
    std::vector<std::string> paths, libs, runtime_dependencies, append_rpaths, ignore_missing;
    bool no_recurse = false, keep_libc = false, ignore_existing = false, origin = false, dry_run = false, in_place = false;
    std::optional<std::string> interpreter;
    bool extra_args_marker = false;  // the arguments themselves are cut from argv by main()
    ResolutionCacheMode ldcache = ResolutionCacheMode::Refresh;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand("auto-patchelf", "Drop-in for Nixpkgs' auto-patchelf: resolve needed libraries, set runpaths and interpreters");
  app->add_option("--paths", o->paths, "Files or directories to patch (all outputs)")->required();
  app->add_option("--libs", o->libs, "Directories or files to search for libraries");
  app->add_option("--runtime-dependencies", o->runtime_dependencies, "Directories put first in executables' runpaths");
  app->add_option("--append-rpaths", o->append_rpaths, "Entries appended to every runpath");
  auto* ignore = app->add_option("--ignore-missing", o->ignore_missing, "Globs of libraries allowed to be missing")
                     ->expected(0, -1);
  app->add_flag("--no-recurse", o->no_recurse, "Do not descend into directories of --paths");
  app->add_flag("--keep-libc", o->keep_libc, "Keep libc's directory in runpaths");
  app->add_flag("--ignore-existing", o->ignore_existing, "Do not follow the runpaths of indexed libraries");
  app->add_flag("--origin", o->origin, "Record dependencies in the file's own directory as $ORIGIN");
  app->add_option("--interpreter", o->interpreter, "Interpreter (default: $NIX_BINTOOLS/nix-support/dynamic-linker)");
  app->add_flag("-n,--dry-run", o->dry_run, "Report, write nothing");
  add_in_place_flag(app, o->in_place);
  add_ldcache_flags(app, o->ldcache);
  app->add_flag("--extra-args", o->extra_args_marker, "patchelf options applied to every file (must come last)");
  return {app, [o, ignore] {
            AutoPatchelfOptions options;
            options.paths.assign(o->paths.begin(), o->paths.end());
            options.libs.assign(o->libs.begin(), o->libs.end());
            options.runtime_dependencies = o->runtime_dependencies;
            options.append_rpaths = o->append_rpaths;
            options.ignore_missing = o->ignore_missing;
            // A bare --ignore-missing (CLI11 records it as one empty value) ignores everything.
            std::erase(options.ignore_missing, std::string());
            if (*ignore && options.ignore_missing.empty()) options.ignore_missing = {"*"};
            options.recurse = !o->no_recurse;
            options.keep_libc = o->keep_libc;
            options.ignore_existing = o->ignore_existing;
            options.origin = o->origin;
            options.dry_run = o->dry_run;
            options.in_place = o->in_place;
            const char* bintools = std::getenv("NIX_BINTOOLS");
            options.interpreter = o->interpreter;
            if (!options.interpreter && bintools)
              options.interpreter = first_line(std::filesystem::path(bintools) / "nix-support/dynamic-linker");
            if (bintools)
              if (auto libc = first_line(std::filesystem::path(bintools) / "nix-support/orig-libc"))
                options.libc_dir = *libc + "/lib";
            if (!auto_patchelf_extra_args().empty()) {
              auto extra = parse_patchelf_arguments(auto_patchelf_extra_args());
              if (!extra || !extra->files.empty()) {
                fmt::print(stderr, "auto-patchelf: invalid --extra-args: {}\n",
                           extra ? "unexpected " + extra->files[0] : extra.error().what);
                return kExitUsage;
              }
              options.extra = patchelf_request(*extra);
            }
            if (o->ldcache != ResolutionCacheMode::Refresh) options.extra.resolution_cache = o->ldcache;
            AutoPatchelfResult result = auto_patchelf(options);
            for (const auto& f : result.files) {
              if (!f.skip_reason.empty()) {
                fmt::print("{}\n", f.skip_reason);
                continue;
              }
              if (f.error) {
                fmt::print(stderr, "auto-patchelf: {}\n", f.error->message());
                continue;
              }
              fmt::print("searching for dependencies of {}\n", f.path);
              for (const auto& d : f.dependencies) {
                if (d.found_dir) fmt::print("    {} -> found: {}\n", d.name, *d.found_dir);
                else fmt::print("    {} -> not found!\n", d.name);
              }
              if (f.set_interpreter) fmt::print("setting interpreter of {}\n", f.path);
              if (f.runpath) fmt::print("setting RPATH to: {}\n", *f.runpath);
              for (const auto& warning : f.warnings) fmt::print("warn: {}: {}\n", f.path, warning);
            }
            if (!result.missing.empty()) {
              fmt::print("auto-patchelf: {} dependencies could not be satisfied\n", result.missing.size());
              for (const auto& m : result.missing) {
                if (m.ignored) fmt::print("warn: auto-patchelf ignoring missing {} wanted by {}\n", m.name, m.wanted_by);
                else fmt::print("error: auto-patchelf could not satisfy dependency {} wanted by {}\n", m.name, m.wanted_by);
              }
            }
            return result.failed() ? kExitProblem : kExitOk;
          }};
}

}  // namespace runpatch::cli
