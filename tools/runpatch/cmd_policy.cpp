// runpatch driver / compat / apply: a runpath policy over files and trees.
#include <fmt/core.h>

#include <filesystem>
#include <string>

#include "../common/log.hpp"
#include "command.hpp"
#include "console.hpp"
#include "runpatch/reading/loader_paths.hpp"
#include "runpatch/policy/policy.hpp"

namespace runpatch::cli {

namespace {

struct PolicyCommandOptions {
  std::vector<std::string> paths;
  bool dry_run = false, force_rpath = false, in_place = false, atomic_copy = false;
  std::vector<std::string> forbid;
  unsigned threads = 0;
  ResolutionCacheMode ldcache = ResolutionCacheMode::Refresh;
  Durability durability = Durability::Auto;
};

void add_common(CLI::App* app, PolicyCommandOptions& o) {
  add_tree_paths(app, o.paths, "Files or directories (every dynamically linked ELF file inside)");
  app->add_flag("-n,--dry-run", o.dry_run, "Print old and new runpath per file; write nothing");
  add_in_place_flag(app, o.in_place, o.atomic_copy);
  add_durability_flags(app, o.durability);
  add_ldcache_flags(app, o.ldcache);
  app->add_flag("--force-rpath", o.force_rpath, "Write DT_RPATH instead of DT_RUNPATH");
  repeatable(
      app->add_option("--forbid", o.forbid, "Drop runpath entries under this prefix (e.g. the build directory)"));
  app->add_option("-j,--jobs", o.threads, "Threads (default: one per core)");
}

int run_policy(const char* name, RunpathPolicy policy, const PolicyCommandOptions& o) {
  policy.force_rpath = policy.force_rpath || o.force_rpath;
  policy.forbidden_prefixes.insert(policy.forbidden_prefixes.end(), o.forbid.begin(), o.forbid.end());
  std::vector<std::filesystem::path> paths(o.paths.begin(), o.paths.end());
  Progress progress(name, verbosity().quiet);
  ApplyOptions options;
  options.edit.dry_run = o.dry_run;
  options.edit.in_place = o.in_place;
  options.edit.atomic_copy = o.atomic_copy;
  options.edit.durability = o.durability;
  options.threads = o.threads;
  options.progress = [&](size_t done, size_t total) { progress.update(done, total); };
  options.resolution_cache = o.ldcache;
  PolicyRun run = apply_policy_to_paths(policy, paths, options);
  progress.finish();  // clear the line before results are printed
  for (const auto& p : run.problems) log_error("{}", p.message());
  for (const auto& f : run.files) {
    using S = PolicyFileOutcome::Status;
    for (const auto& warning : f.warnings) log_warning("{}: {}", f.path, warning.text);
    if (f.status == S::Failed && f.error)
      log_error("{}", f.error->message());
    else if (f.status == S::Edited && o.dry_run)
      fmt::print("{}: '{}' -> '{}'\n", f.path, f.old_runpath, f.new_runpath);
    else if (f.status == S::Edited)
      log_debug("{}: '{}' -> '{}'", f.path, f.old_runpath, f.new_runpath);
  }
  log_info("{}: {} {}, {} unchanged, {} statically linked skipped{}", name, run.edited,
           o.dry_run ? "would change" : "edited", run.unchanged, run.skipped_static,
           run.failed ? fmt::format(", {} failed", run.failed) : "");
  return run.failed || !run.problems.empty() ? kExitProblem : kExitOk;
}

}  // namespace

Command add_driver_command(CLI::App& root) {
  struct Options : PolicyCommandOptions {
    std::vector<std::string> driver_dirs{kDefaultDriverDir};
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand("driver", "Put the driver directory first in every runpath (after cuda_compat)");
  add_common(app, *o);
  repeatable(app->add_option("--driver-dir", o->driver_dirs, "Driver library directory"))->capture_default_str();
  return {app, [o] {
            RunpathPolicy policy;
            policy.driver = true;
            policy.driver_dirs = o->driver_dirs;
            return run_policy("driver", policy, *o);
          }};
}

// The library judges the value; the tool words it as the compat command's.
bool usable_compat_dir(const std::string& dir) {
  auto verdict = validate_compat_dir(dir);
  if (!verdict) {
    log_error("compat: {}", verdict.error().message());
    return false;
  }
  if (*verdict) log_warning("compat: warning: {}", **verdict);
  return true;
}

Command add_compat_command(CLI::App& root) {
  struct Options : PolicyCommandOptions {
    std::vector<std::string> libcuda_dirs;
    std::vector<std::string> driver_dirs{kDefaultDriverDir};
    bool with_driver = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand("compat", "Put cuda_compat's libcuda directory first in every runpath");
  add_common(app, *o);
  repeatable(app->add_option("--libcuda", o->libcuda_dirs, "Directory holding cuda_compat's libcuda.so.1"))->required();
  repeatable(app->add_option("--driver-dir", o->driver_dirs, "Driver directory to keep behind it"))
      ->capture_default_str();
  app->add_flag("--with-driver", o->with_driver,
                "Also add the driver directory behind it where it is missing (the driver hook's edit, in the same "
                "write: hooks/auto-add-cuda-compat-runpath.sh passes it when that hook runs too)");
  return {app, [o] {
            for (const auto& dir : o->libcuda_dirs)
              if (!usable_compat_dir(dir)) return kExitUsage;
            RunpathPolicy policy;
            policy.compat_dirs = o->libcuda_dirs;
            policy.driver_dirs = o->driver_dirs;
            policy.driver = o->with_driver;
            return run_policy("compat", policy, *o);
          }};
}

Command add_apply_command(CLI::App& root) {
  struct Options : PolicyCommandOptions {
    std::string policy_file;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = root.add_subcommand("apply", "Apply a runpath policy file (docs/policies.md)");
  app->add_option("--policy", o->policy_file, "JSON policy file")->required();
  add_common(app, *o);
  return {app, [o] {
            auto policy = RunpathPolicy::from_json_file(o->policy_file);
            if (!policy) {
              log_error("{}", policy.error().message());
              return exit_code_for(policy.error(), ErrorSource::CommandLine);
            }
            return run_policy("apply", *policy, *o);
          }};
}

}  // namespace runpatch::cli
