#include <fmt/core.h>
#include <unistd.h>

#include "../common/log.hpp"
#include "command.hpp"
#include "console.hpp"
#include "output_file.hpp"
#include "runpatch/reporting/check_report.hpp"
#include "search_options.hpp"

namespace runpatch::cli {

Command add_check_command(CLI::App& root) {
  struct Options {
    std::vector<std::string> paths, forbid, disable, search_dirs, driver_dirs{kDefaultDriverDir};
    std::optional<std::string> interpreter, junit, sarif, require, jetpack;
    std::string closure = "auto";
    std::string fail_on = "error";
    bool json = false;
    SearchOptions search;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app =
      root.add_subcommand("check", "Verify runpaths for CI: findings by rule, exit 1 at --fail-on severity");
  add_tree_paths(app, o->paths, "Files or directories");
  repeatable(app->add_option("--forbid", o->forbid,
                             "Forbidden runpath prefix ($TMPDIR and $NIX_BUILD_TOP are always, unless /tmp itself)"));
  repeatable(app->add_option("--disable", o->disable, "Turn a rule off (rule ids: docs/check.md)"));
  repeatable(app->add_option(
      "--search", o->search_dirs,
      "Also find DT_NEEDED libraries here (searched like LD_LIBRARY_PATH, e.g. dependencies' outputs)"));
  repeatable(app->add_option("--driver-dir", o->driver_dirs, "The driver directory"))->capture_default_str();
  app->add_option("--interpreter", o->interpreter, "Executables must use this interpreter");
  app->add_option("--require", o->require, "'runpath': DT_RPATH is an error")->check(CLI::IsMember({"runpath"}));
  app->add_option("--closure", o->closure,
                  "Where the files run, for driver-dir-missing: nix (a Nix closure), host (a distribution's "
                  "install, libcuda from ld.so.cache), auto (nix for store paths, Nix glibc and Nix builds)")
      ->check(CLI::IsMember(names_of(kClosures, closure_name)))
      ->capture_default_str();
  app->add_option("--fail-on", o->fail_on, "Lowest severity that fails: error, warning, info")
      ->check(CLI::IsMember(names_of(kSeverities, severity_name)))
      ->capture_default_str();
  app->add_option(
      "--jetpack", o->jetpack,
      "Target JetPack (5.1.5, 6.2.1, 7.0, or a prefix like 6): the package set's CUDA must be in its range");
  app->add_flag("--json", o->json, "Print JSON");
  app->add_option("--junit", o->junit, "Also write a JUnit XML report here");
  app->add_option("--sarif", o->sarif, "Also write a SARIF 2.1.0 report here");
  o->search.add_to(app);
  return {app, [o] {
            CheckOptions options;
            options.env = o->search.environment();
            options.env.ld_library_path.insert(options.env.ld_library_path.end(), o->search_dirs.begin(),
                                               o->search_dirs.end());
            options.forbidden_prefixes = o->forbid;
            for (auto& prefix : build_directory_prefixes()) options.forbidden_prefixes.push_back(std::move(prefix));
            options.driver_dirs = o->driver_dirs;
            options.interpreter = o->interpreter;
            options.require_runpath = o->require.has_value();
            options.closure = parse_closure(o->closure).value_or(CheckOptions::Closure::Auto);  // checked above
            Status valid;
            if (o->jetpack) {
              auto note = target_jetpack(options, *o->jetpack);
              if (!note) valid = note.error();
              if (note && !note->empty()) log_info("note: {}", *note);
            }
            if (valid) valid = disable_check_rules(options, o->disable);
            if (!valid) {
              log_error("{}", valid.error().message());
              return exit_code_for(valid.error(), ErrorSource::CommandLine);
            }
            std::optional<OutputFile> junit, sarif;
            for (auto [name, file] : {std::pair{&o->junit, &junit}, {&o->sarif, &sarif}}) {
              if (!*name) continue;
              auto opened = OutputFile::open(**name);
              if (!opened) return report_unwritable(opened.error());
              file->emplace(std::move(*opened));
            }
            std::vector<std::filesystem::path> paths(o->paths.begin(), o->paths.end());
            Progress progress("check", verbosity().quiet);
            options.progress = [&](size_t done, size_t total) { progress.update(done, total); };
            CheckReport report = check_paths(paths, options);
            progress.finish();
            // Unreadable files are unreadable-file findings in the report itself.
            Severity fail_on = *parse_severity(o->fail_on);
            if (o->json)
              fmt::print("{}\n", json_text(check_json(report)));
            else
              fmt::print("{}", format_check_text(report, stdout_wants_color(), !verbosity().quiet));
            // A report that cannot be written is a failed run: CI would otherwise see no findings.
            Status written;
            if (junit) written = junit->write_and_close(check_junit(report, fail_on));
            if (written && sarif)
              written = sarif->write_and_close(json_text(check_sarif(report, RUNPATCH_VERSION)) + "\n");
            if (!written) return report_unwritable(written.error());
            return report.any_at_least(fail_on) ? kExitProblem : kExitOk;
          }};
}

}  // namespace runpatch::cli
