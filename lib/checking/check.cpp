#include <fmt/format.h>

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "checking/check_jetson_rules.hpp"
#include "checking/check_nix_rules.hpp"
#include "checking/nix_paths.hpp"
#include "runpatch/reading/loader_paths.hpp"
#include "runpatch/checking/check.hpp"
#include "runpatch/reading/elf_types.hpp"
#include "runpatch/resolving/resolution_cache.hpp"
#include "runpatch/cuda/cuda.hpp"
#include "runpatch/policy/policy.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "runpatch/scanning/scan.hpp"

namespace runpatch {

namespace fs = std::filesystem;

namespace {

// A finding at its rule's severity unless one is given.
Finding make_finding(CheckRule rule, std::string file, std::string message,
                     std::optional<Severity> severity = std::nullopt) {
  return {rule, severity.value_or(rule_info(rule).severity), std::move(file), std::move(message)};
}

// Two spellings of one file compare equal (symlinked roots, "..").
std::string same_file_key(const std::string& path) {
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(path, ec);
  return ec ? path : canonical.string();
}

// A dependency (requester) of a checked program found `library` through what
// loads it: the DT_RPATH of an object above it, or the library already loaded.
struct FoundInContext {
  std::string requester, library, program;
  FoundVia via;
};

// A library checked alone misses what a program of the same run supplies it
// (its DT_RPATH, inherited down the chain, or the library it loaded first):
// it loads fine there. The finding stays, as a note naming that context.
void judge_in_the_programs_context(std::vector<std::vector<Finding>>& per_file,
                                   const std::vector<FoundInContext>& finds, const fs::path& root) {
  for (auto& findings : per_file)
    for (auto& f : findings) {
      if (f.rule != CheckRule::UnresolvedNeeded || !f.requester.empty() || f.library.empty()) continue;
      for (const auto& find : finds)
        if (find.library == f.library &&
            same_file_key(under_root(root, find.requester).string()) == same_file_key(f.file)) {
          f.severity = Severity::Info;
          f.message += fmt::format(
              " on its own; loaded by {}, it is found ({}): it holds only where {} is loaded some other way",
              find.program,
              find.via == FoundVia::Rpath ? "through that program's DT_RPATH, inherited"
                                          : "that program has already loaded it",
              f.file);
          break;
        }
    }
}

// The site-packages (or dist-packages) directory a file lies in, and the
// package (its first directory there; auditwheel's "<pkg>.libs" is <pkg>'s).
struct SitePackagesPlace {
  std::string root, package;
};

std::optional<SitePackagesPlace> site_packages_place(const std::string& path) {
  for (std::string_view dir : {"site-packages/", "dist-packages/"}) {
    size_t at = path.rfind(dir);
    if (at == std::string::npos || (at > 0 && path[at - 1] != '/')) continue;
    size_t name_at = at + dir.size(), slash = path.find('/', name_at);
    if (slash == std::string::npos) return SitePackagesPlace{path.substr(0, name_at), ""};
    std::string package = path.substr(name_at, slash - name_at);
    if (package.ends_with(".libs")) package.resize(package.size() - 5);
    return SitePackagesPlace{path.substr(0, name_at), package};
  }
  return std::nullopt;
}

// In a Python tree, an extension module's library that another package of
// the same site-packages provides loads once that package is imported (an
// import before it put the soname into the interpreter: torchaudio's
// libtorch.so after `import torch`). Not an error of this file, but a
// warning saying which import it depends on; what no package provides stays
// an error (no import order can satisfy it).
using ProvidersBySoname = std::map<std::pair<std::string, std::string>, std::string>;  // (site-packages, name) -> file

// A site-packages only partly checked: its other files, by file name (the
// soname, or the name a wheel's library is installed under), walked once.
void add_providers_on_disk(ProvidersBySoname& providers, const std::string& root) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec) && !it->is_symlink(ec) &&
        it->path().filename().string().find(".so") != std::string::npos)
      providers.emplace(std::make_pair(root, it->path().filename().string()), it->path().string());
  }
}

void judge_in_the_interpreters_context(std::vector<std::vector<Finding>>& per_file,
                                       const std::vector<const ElfInfo*>& checked) {
  ProvidersBySoname provider;
  for (const ElfInfo* info : checked)
    if (auto place = site_packages_place(info->path))
      provider.emplace(std::make_pair(place->root, info->soname.value_or(basename_of(info->path))), info->path);
  std::set<std::string> walked;
  for (auto& findings : per_file)
    for (auto& f : findings) {
      if (f.rule != CheckRule::UnresolvedNeeded || f.library.empty() || f.severity != Severity::Error) continue;
      auto place = site_packages_place(f.file);
      if (!place) continue;
      auto found = provider.find({place->root, f.library});
      if (found == provider.end() && walked.insert(place->root).second) {
        add_providers_on_disk(provider, place->root);
        found = provider.find({place->root, f.library});
      }
      if (found == provider.end()) continue;
      auto from = site_packages_place(found->second);
      f.severity = Severity::Warning;
      f.message += fmt::format(
          "; {} of the same site-packages provides it: found once the '{}' package is imported (its import loads "
          "it into the interpreter first), not by the loader's search",
          found->second, from && !from->package.empty() ? from->package : basename_of(found->second));
    }
}

// Each failure once: a dependency's unresolved library that the dependency,
// checked in the same run, reports itself is not repeated at every program
// that loads it.
void drop_failures_reported_at_their_requester(std::vector<std::vector<Finding>>& per_file, const fs::path& root) {
  std::set<std::pair<std::string, std::string>> reported;
  for (const auto& findings : per_file)
    for (const auto& f : findings)
      if (f.rule == CheckRule::UnresolvedNeeded && f.requester.empty() && !f.library.empty() &&
          f.severity == Severity::Error)
        reported.insert({same_file_key(f.file), f.library});
  for (auto& findings : per_file)
    std::erase_if(findings, [&](const Finding& f) {
      return !f.requester.empty() && reported.count({same_file_key(under_root(root, f.requester).string()), f.library});
    });
}

class Checker {
 public:
  Checker(const CheckOptions& o, ResolutionSession& session) : o_(o), session_(session) {}

  void check(const fs::path& path, const ElfInfo& info, std::vector<Finding>& out) {
    out_ = &out;
    file_ = path.string();
    auto tree = session_.resolve_tree(path);
    // $ORIGIN is the loader's: under --root, the file's path inside the root.
    view_ = tree && !tree->objects.empty() ? tree->objects[0].path : file_;
    check_runpath(info, tree ? &*tree : nullptr);
    check_dependencies(path, info, tree);
    check_resolution_cache(info);
    if (info.interrupted_edit_tail)
      add(CheckRule::InterruptedEdit,
          fmt::format("{} bytes from offset {:#x} on are the tail of an edit killed before its commit; the file reads "
                      "as before that edit, and the next edit reclaims them",
                      info.file_size - *info.interrupted_edit_tail, *info.interrupted_edit_tail));
    if (o_.interpreter && info.interpreter && *info.interpreter != *o_.interpreter)
      add(CheckRule::WrongInterpreter,
          fmt::format("interpreter is {}, expected {}", *info.interpreter, *o_.interpreter));
  }

 private:
  void add(CheckRule rule, check_rules_nix::FindingText text, std::optional<Severity> severity = std::nullopt) {
    if (o_.disabled.count(rule)) return;
    out_->push_back(make_finding(rule, file_, std::move(text.message), severity));
    out_->back().libraries = std::move(text.libraries);
  }

  // The program as the loader runs it: a library that a dependency needs and
  // that its search (its own runpath, DT_RPATH inherited down the chain) does
  // not find stops the program too. Reported here with the chain that leads
  // there; check_paths drops it when the requester, checked itself, reports it.
  void unresolved_in_closure(const DependencyTree& tree) {
    for (const auto& edge : tree.edges) {
      // The driver's libraries are absent where packages are built: driver-library judges them, at their requester.
      if (edge.from == 0 || edge.dlopen || edge.resolution.path || is_driver_library(edge.resolution.name)) continue;
      // As the loader names it ("bin/../ext/libA.so"), shown without the detour.
      const std::string requester = fs::path(tree.objects[edge.from].path).lexically_normal().string();
      std::string chain = edge.resolution.name;
      for (std::optional<size_t> at = edge.from; at; at = tree.objects[*at].loader)
        chain = basename_of(tree.objects[*at].path) + " -> " + chain;
      add(CheckRule::UnresolvedNeeded,
          fmt::format("{} is not found for {} ({} places tried; loaded as {}): the runpath of {} must find it",
                      edge.resolution.name, requester, edge.resolution.attempts.size(), chain, requester));
      if (o_.disabled.count(CheckRule::UnresolvedNeeded)) continue;
      out_->back().library = edge.resolution.name;
      out_->back().requester = requester;
    }
  }

  // What this program supplies the libraries it loads (judge_in_the_programs_context).
  void record_found_in_context(const DependencyTree& tree) {
    for (const auto& edge : tree.edges) {
      const Resolution& r = edge.resolution;
      bool inherited = r.via == FoundVia::Rpath && r.via_object != tree.objects[edge.from].path;
      if (edge.from != 0 && r.path && (inherited || r.via == FoundVia::AlreadyLoaded))
        found_in_context.push_back({tree.objects[edge.from].path, r.name, file_, r.via});
    }
  }

  // A .note.dlopen entry of the file that no name of it finds: as severe as
  // the note's priority says (the FreeDesktop spec's). libcuda is the driver
  // rules' (driver-dir-missing); implied dlopens have no priority.
  void unresolved_dlopens(const DependencyTree& tree) {
    for (const auto& edge : tree.edges) {
      if (edge.from != 0 || !edge.dlopen || edge.resolution.path || edge.dlopen_priority.empty() ||
          is_driver_library(edge.resolution.name))
        continue;
      Severity severity = edge.dlopen_priority == "required"      ? Severity::Error
                          : edge.dlopen_priority == "recommended" ? Severity::Warning
                                                                  : Severity::Info;
      add(CheckRule::UnresolvedDlopen,
          fmt::format("{} ({} dlopen of feature '{}') is not found ({} places tried)", edge.resolution.name,
                      edge.dlopen_priority, edge.dlopen_reason, edge.resolution.attempts.size()),
          severity);
    }
  }

  check_rules_nix::AddFinding adder() {
    return [this](CheckRule rule, check_rules_nix::FindingText text) { add(rule, std::move(text)); };
  }

  // A driver directory, as written or as the loader reads it ($ORIGIN/../../run/opengl-driver/lib inside --root).
  bool is_driver_entry(const std::string& e) const {
    auto named = [&](const std::string& dir) {
      return std::find(o_.driver_dirs.begin(), o_.driver_dirs.end(), dir) != o_.driver_dirs.end();
    };
    if (named(e)) return true;
    if (!names_origin(e)) return false;
    std::string dir = fs::path(expand_origin(e, dirname_of(view_))).lexically_normal().string();
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    return named(dir);
  }

  // Which entries are compat layers, by name or by the libcuda they hold;
  // needing_driver: those known to need the driver behind them (by name, or a
  // libcuda needing driver libraries its directory lacks). A directory with a
  // self-contained libcuda may be a driver of its own.
  std::vector<bool> compat_layers(const std::vector<std::string>& entries, std::vector<bool>& needing_driver) const {
    std::vector<bool> compat;
    for (const auto& e : entries) {
      fs::path host = under_root(o_.env.root, expand_origin(e, dirname_of(view_)));
      compat.push_back(is_compat_layer(e, host, o_.driver_dirs));
      needing_driver.push_back(looks_like_compat_dir(e) || (compat.back() && libcuda_needs_driver_beside(host)));
    }
    return compat;
  }

  void check_runpath(const ElfInfo& info, const DependencyTree* tree) {
    if (info.rpath && !info.runpath)
      add(CheckRule::RpathNotRunpath, "uses DT_RPATH (searched before LD_LIBRARY_PATH, inherited by dependencies)",
          o_.require_runpath ? std::optional<Severity>(Severity::Error) : std::nullopt);
    // An empty DT_RUNPATH (what patchelf --shrink-rpath leaves) holds no entry:
    // glibc's decompose_rpath searches nothing for it. Only an empty entry inside
    // a list (a::b, :a, a:) is the current directory.
    std::vector<std::string> entries = split_runpath(effective_runpath(info));
    std::vector<std::string> seen;
    std::optional<size_t> driver_at;
    std::vector<bool> needing_driver;
    std::vector<bool> compat = compat_layers(entries, needing_driver);
    std::vector<bool> driver;
    for (const auto& e : entries) driver.push_back(is_driver_entry(e));
    for (size_t i = 0; i < entries.size(); ++i) {
      const std::string& e = entries[i];
      if (std::find(seen.begin(), seen.end(), e) != seen.end())
        add(CheckRule::DuplicateEntry, fmt::format("'{}' appears more than once", e));
      seen.push_back(e);
      bool is_driver = driver[i];
      if (is_driver && !driver_at) driver_at = i;
      if (compat[i] && driver_at)
        add(CheckRule::CompatAfterDriver,
            fmt::format("cuda_compat directory '{}' comes after the driver directory '{}': "
                        "the driver's libcuda would win",
                        e, entries[*driver_at]));
      if (e.empty() || (e[0] != '/' && !starts_with_origin(e))) {
        add(CheckRule::RelativeEntry, e.empty() ? "an empty entry means the current directory"
                                                : fmt::format("'{}' is relative to the current directory", e));
        continue;
      }
      if (is_stubs_directory(e))
        add(CheckRule::StubsEntry,
            fmt::format("'{}' holds link-time stubs (e.g. libcuda.so); never search it at run time", e));
      check_rules_nix::entry_bloat(e, adder());
      for (const auto& prefix : o_.forbidden_prefixes)
        if (!prefix.empty() && e.rfind(prefix, 0) == 0)
          add(CheckRule::ForbiddenPrefix, fmt::format("'{}' is under the forbidden prefix '{}'", e, prefix));
      if (is_driver) continue;  // the driver directory exists on the target machine, not here
      // $LIB and $PLATFORM as the file's loader substitutes them (resolving found out).
      if (names_loader_tokens(e) && (!tree || tree->lib_token.empty())) continue;
      std::string dir =
          expand_dynamic_tokens(e, {dirname_of(view_), tree ? tree->lib_token : "", tree ? tree->platform_token : ""});
      fs::path host = under_root(o_.env.root, dir);
      struct stat st {};
      if (::stat(host.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        add(CheckRule::MissingEntry, fmt::format("'{}' does not exist", e));
      } else if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
        add(CheckRule::WorldWritable, fmt::format("'{}' is writable by everyone", e));
      }
      if (S_ISDIR(st.st_mode) && !is_stubs_directory(e)) check_rules_nix::entry_stub(e, host, adder());
    }
    check_rules_jetson::compat_entries(entries, needing_driver, driver, o_.driver_dirs, adder());
  }

  // The note must say what the builder says now: a cached file that is gone,
  // or a directory that gained or lost a library, makes it stale.
  void check_resolution_cache(const ElfInfo& info) {
    const auto& note = info.resolution_cache;
    if (!note) return;
    if (!note->defect.empty()) {
      add(CheckRule::StaleLdcache, "the resolution cache is unreadable: " + note->defect);
      return;
    }
    bool gone = false;
    for (const auto& entry : note->entries)
      for (const auto& location : entry.locations) {
        std::error_code ec;
        if (location[0] == '=' && !fs::exists(under_root(o_.env.root, location.substr(1)), ec)) {
          add(CheckRule::StaleLdcache, fmt::format("the resolution cache sends {} to {}, which no longer exists",
                                                   entry.needed, location.substr(1)));
          gone = true;
        }
      }
    if (gone) return;
    ResolutionCache now = build_resolution_cache(resolution_cache_inputs(info), o_.env.root);
    if (now == note->entries) return;
    std::string what = "the note lists libraries the runpath no longer finds, or misses some it finds";
    for (const auto& entry : now) {
      auto old = std::find_if(note->entries.begin(), note->entries.end(),
                              [&](const ResolutionCacheEntry& e) { return e.needed == entry.needed; });
      if (old == note->entries.end() || *old != entry) {
        what = fmt::format("for {} the note says '{}', the runpath now gives '{}'", entry.needed,
                           old == note->entries.end() ? "" : join_locations(old->locations),
                           join_locations(entry.locations));
        break;
      }
    }
    add(CheckRule::StaleLdcache, what + " (refresh: runpatch set --ldcache FILE)");
  }

  void check_dependencies(const fs::path& path, const ElfInfo& info, const Expected<DependencyTree>& tree) {
    if (!tree) {
      add(CheckRule::UnresolvedNeeded, tree.error().message());
      return;
    }
    loader = tree->loader;
    record_found_in_context(*tree);
    unresolved_in_closure(*tree);
    unresolved_dlopens(*tree);
    for (const auto& edge : tree->edges) {
      if (edge.from != 0 || edge.dlopen || edge.resolution.path) continue;
      const std::string& name = edge.resolution.name;
      if (is_driver_library(name)) {
        add(CheckRule::DriverLibrary,
            fmt::format("needs {}, which only the NVIDIA driver provides (the CUDA toolkit has "
                        "just the link-time stub lib/stubs/libcuda.so)",
                        name));
      } else {
        add(CheckRule::UnresolvedNeeded,
            fmt::format("{} is not found ({} places tried)", name, edge.resolution.attempts.size()));
        out_->back().library = name;
      }
    }
    check_rules_nix::version_mix(*tree, adder());
    check_rules_jetson::libcuda_own_search(*tree, o_.env.root, o_.driver_dirs, "", adder());
    dlopened_libcuda(*tree);
    if (o_.jetpack) check_rules_jetson::jetpack_range(*tree, *o_.jetpack, o_.env.root, adder());
    // What the runpath alone resolves: the checking shell's LD_LIBRARY_PATH
    // must neither make entries look unused nor hide what it overrides.
    auto runpath_tree = check_rules_nix::without_ld_library_path(path, o_.env);
    const DependencyTree& by_runpath = runpath_tree ? *runpath_tree : *tree;
    check_rules_nix::unused_entries(by_runpath, o_, adder());
    check_rules_nix::shadowing(*tree, by_runpath, adder());
    if (in_nix_closure(path, tree->loader) && (loads_libcuda(info) || carries_static_cuda_runtime(info, path))) {
      auto entries = split_runpath(effective_runpath(info));
      bool has_driver = std::any_of(entries.begin(), entries.end(), [&](const std::string& e) {
        return std::find(o_.driver_dirs.begin(), o_.driver_dirs.end(), e) != o_.driver_dirs.end();
      });
      if (!has_driver)
        add(CheckRule::DriverDirMissing,
            fmt::format("needs or dlopens libcuda.so.1 but its runpath lacks {}",
                        o_.driver_dirs.empty() ? "the driver directory" : o_.driver_dirs.front()));
    }
  }

 public:
  std::optional<LoaderModel> loader;  // of the file checked, once resolved
  // Libraries of its closure that find a needed library through what loads
  // them (a DT_RPATH inherited, or the library already loaded): their context.
  std::vector<FoundInContext> found_in_context;

 private:
  // A libcuda the tree dlopens (libcudart's) is loaded with its own runpath:
  // its tree, resolved apart, must find the driver libraries a compat libcuda needs.
  void dlopened_libcuda(const DependencyTree& tree) {
    for (const auto& e : tree.edges) {
      if (!e.dlopen || e.to || !e.resolution.path || e.resolution.name.rfind("libcuda.so", 0) != 0) continue;
      auto own = session_.resolve_tree(under_root(o_.env.root, *e.resolution.path));
      if (!own) continue;
      std::string how = "dlopen by " + basename_of(tree.objects[e.from].path);
      check_rules_jetson::libcuda_own_search(*own, o_.env.root, o_.driver_dirs, how, adder());
    }
  }

  bool in_nix_closure(const std::string& path, const LoaderModel& model) const {
    switch (o_.closure) {
      case CheckOptions::Closure::Nix: return true;
      case CheckOptions::Closure::Host: return false;
      case CheckOptions::Closure::Auto: break;
    }
    const char* build_top = std::getenv("NIX_BUILD_TOP");
    return (build_top && *build_top) || model.kind == LoaderKind::NixGlibc || parse_store_path(path).has_value();
  }

  const CheckOptions& o_;
  ResolutionSession& session_;
  std::vector<Finding>* out_ = nullptr;
  std::string file_;
  std::string view_;  // file_ as the loader sees it (inside --root)
};

}  // namespace

namespace {
// The problem without the file name the finding already carries.
std::string unreadable_message(const Error& problem) {
  if (!problem.offset) return problem.what;
  return fmt::format("{} (at offset {:#x})", problem.what, *problem.offset);
}
}  // namespace

CheckReport check_paths(const std::vector<fs::path>& paths, const CheckOptions& options) {
  CheckReport report;
  TreeListing listing = list_elf_files(paths);
  report.problems = std::move(listing.problems);
  auto infos = read_elf_infos(listing.elf_files, options.threads);
  std::vector<size_t> dynamic;
  std::map<std::pair<ElfClass, uint16_t>, size_t> machines;
  for (size_t i = 0; i < infos.size(); ++i) {
    if (!infos[i]) {
      report.problems.push_back(infos[i].error());
      continue;
    }
    if (!infos[i]->has_dynamic || infos[i]->type == elf::ET_REL) continue;
    dynamic.push_back(i);
    ++machines[{infos[i]->identity.elf_class, infos[i]->identity.machine}];
  }
  auto majority = std::max_element(machines.begin(), machines.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
  std::vector<std::vector<Finding>> per_file(dynamic.size());
  std::vector<std::optional<LoaderModel>> loaders(dynamic.size());
  std::vector<std::vector<FoundInContext>> in_context(dynamic.size());
  // Sessions are not thread-safe but are worth sharing (mapped ld.so.cache, headers):
  // each worker borrows one from a pool.
  std::mutex pool_mutex;
  std::vector<std::unique_ptr<ResolutionSession>> pool;
  std::atomic<size_t> done{0};
  parallel_for(dynamic.size(), options.threads, [&](size_t k) {
    std::unique_ptr<ResolutionSession> session;
    {
      std::lock_guard lock(pool_mutex);
      if (!pool.empty()) {
        session = std::move(pool.back());
        pool.pop_back();
      }
    }
    if (!session) session = std::make_unique<ResolutionSession>(options.env);
    Checker checker(options, *session);
    const auto& info = *infos[dynamic[k]];
    checker.check(listing.elf_files[dynamic[k]], info, per_file[k]);
    loaders[k] = std::move(checker.loader);
    in_context[k] = std::move(checker.found_in_context);
    if (machines.size() > 1 && majority != machines.end() &&
        std::make_pair(info.identity.elf_class, info.identity.machine) != majority->first &&
        !options.disabled.count(CheckRule::ForeignMachine))
      per_file[k].push_back(make_finding(
          CheckRule::ForeignMachine, info.path,
          fmt::format("{} {} among {} {} files", info.identity.elf_class == ElfClass::Elf64 ? "ELF64" : "ELF32",
                      machine_name(info.identity.machine), majority->second, machine_name(majority->first.second))));
    if (options.progress) options.progress(done.fetch_add(1) + 1, dynamic.size());
    std::lock_guard lock(pool_mutex);
    pool.push_back(std::move(session));
  });
  // A library's failure that some program's DT_RPATH mends first becomes a
  // note; then a program's failure is dropped only where its requester still
  // reports it as an error (a second program without that DT_RPATH keeps its own).
  std::vector<FoundInContext> all_in_context;
  for (auto& finds : in_context) all_in_context.insert(all_in_context.end(), finds.begin(), finds.end());
  judge_in_the_programs_context(per_file, all_in_context, options.env.root);
  drop_failures_reported_at_their_requester(per_file, options.env.root);
  std::vector<const ElfInfo*> checked;
  for (size_t index : dynamic) checked.push_back(&*infos[index]);
  judge_in_the_interpreters_context(per_file, checked);
  // Every file in path order, unreadable ones among them: reports in every
  // format then show what made the run fail.
  std::map<std::string, std::vector<Finding>> by_file;
  for (size_t k = 0; k < dynamic.size(); ++k) {
    std::string file = listing.elf_files[dynamic[k]].string();
    if (loaders[k]) report.loaders.emplace(file, std::move(*loaders[k]));
    by_file[file] = std::move(per_file[k]);
  }
  for (const auto& problem : report.problems) {
    auto& findings = by_file[problem.file];
    if (!options.disabled.count(CheckRule::UnreadableFile))
      findings.push_back(make_finding(CheckRule::UnreadableFile, problem.file, unreadable_message(problem)));
  }
  for (auto& [file, findings] : by_file) {
    report.files.push_back(file);
    for (auto& f : findings) report.findings.push_back(std::move(f));
  }
  return report;
}

std::vector<Finding> tree_findings(const fs::path& file, const DependencyTree& tree, const SearchEnvironment& env) {
  std::vector<Finding> out;
  auto add = [&](CheckRule rule, check_rules_nix::FindingText text) {
    out.push_back(make_finding(rule, file.string(), std::move(text.message)));
    out.back().libraries = std::move(text.libraries);
  };
  check_rules_nix::version_mix(tree, add);
  if (auto by_runpath = check_rules_nix::without_ld_library_path(file, env))
    check_rules_nix::shadowing(tree, *by_runpath, add);
  // A stub libcuda actually loaded (not just reachable): the strongest form of runtime-stub.
  auto stub = [&](const std::string& path, const ElfInfo& info) {
    if (is_stub_libcuda(info, path))
      add(CheckRule::RuntimeStub,
          {fmt::format("loads {}, the toolkit's stub ({} bytes of code): every CUDA call fails", path, info.code_size),
           {info.soname ? *info.soname : basename_of(path)}});
  };
  for (const auto& o : tree.objects) stub(o.path, *o.info);
  for (const auto& e : tree.edges)  // a dlopen'ed libcuda is not among the loaded objects
    if (e.dlopen && e.resolution.path && !e.to)
      if (auto info = read_elf_info(under_root(env.root, *e.resolution.path))) stub(*e.resolution.path, *info);
  return out;
}

}  // namespace runpatch
