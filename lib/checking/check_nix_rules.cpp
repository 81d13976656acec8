#include "checking/check_nix_rules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "checking/nix_paths.hpp"
#include "runpatch/reading/loader_paths.hpp"
#include "runpatch/cuda/cuda.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/policy/policy.hpp"

namespace runpatch::check_rules_nix {

namespace fs = std::filesystem;

namespace {

// "libcublas.so.13.0.2" -> {"libcublas", "13"}; nullopt for unversioned names.
std::optional<std::pair<std::string, std::string>> soname_major(std::string_view name) {
  auto so = name.find(".so.");
  if (so == std::string::npos) return std::nullopt;
  std::string_view major = name.substr(so + 4, name.find('.', so + 4) - (so + 4));
  if (major.empty()) return std::nullopt;
  return std::make_pair(std::string(name.substr(0, so)), std::string(major));
}

// How many directory entries a rule looks at before it gives up (a time bound).
constexpr size_t kMeasuredEntries = 100000;

bool is_cuda_library(std::string_view base) {
  for (const char* prefix : {"libcu", "libnv", "libnpp", "libcudnn", "libnccl", "libcutensor"})
    if (base.rfind(prefix, 0) == 0) return true;
  return false;
}

// How the loader reached an object: "via runpath of X (entry D)".
std::string how_reached(const DependencyTree& tree, size_t object) {
  for (const auto& e : tree.edges) {
    if (e.to != object || !e.resolution.path) continue;
    const Resolution& r = e.resolution;
    std::string by = tree.objects[e.from].path;
    if (r.via == FoundVia::Runpath || r.via == FoundVia::Rpath)
      return fmt::format("needed by {}, found through {} entry {}", by, found_via_name(r.via), dirname_of(*r.path));
    return fmt::format("needed by {}, found through {}", by, found_via_name(r.via));
  }
  return "loaded first";
}

std::string bytes_text(uint64_t bytes) {
  if (bytes >= (uint64_t(1) << 30)) return fmt::format("{:.1f} GiB", double(bytes) / double(uint64_t(1) << 30));
  if (bytes >= (uint64_t(1) << 20)) return fmt::format("{:.1f} MiB", double(bytes) / double(uint64_t(1) << 20));
  return fmt::format("{} KiB", (bytes + 1023) / 1024);
}

// What keeping an entry costs: its whole store path, measured within a bound
// (an ordinary directory like / or /usr is no closure cost). Nothing for an
// entry inside the file's own package: that is alive as long as the file is.
std::string kept_alive(const std::string& entry, const fs::path& host_dir, const std::string& file) {
  auto store = parse_store_path(entry);
  auto own = parse_store_path(file);
  if (!store || (own && store->root == own->root)) return "";
  fs::path measured =
      fs::path(host_dir.string().substr(0, host_dir.string().size() - (entry.size() - store->root.size())));
  auto bytes = directory_bytes(measured, kMeasuredEntries);
  if (!bytes) return "";
  return fmt::format("; it keeps {} alive ({})", measured.string(), bytes_text(*bytes));
}

// Whether any of the directory's entries (the first kMeasuredEntries) has a name that matches.
template <class Match>
bool any_entry_named(const fs::path& host_dir, Match&& match) {
  std::error_code ec;
  size_t looked = 0;
  for (fs::directory_iterator it(host_dir, ec), end; !ec && it != end && looked < kMeasuredEntries;
       it.increment(ec), ++looked)
    if (match(it->path().filename().string())) return true;
  return false;
}

bool holds_a_library(const fs::path& host_dir) {
  return any_entry_named(host_dir, [](const std::string& name) {
    return name.ends_with(".so") || name.find(".so.") != std::string::npos;
  });
}

// Whether the directory holds a library the file may dlopen without a
// DT_NEEDED: one its dlopen notes name, libcuda for what loads the driver,
// or, for a CUDA library, another CUDA library (cuDNN loads its
// libcudnn_ops/_adv/_cnn/_graph, cuBLAS its cublasLt, by name).
bool may_dlopen_from(const ElfInfo& info, const fs::path& host_dir) {
  std::error_code ec;
  for (const auto& d : info.dlopen)
    for (const auto& soname : d.sonames)
      if (fs::exists(host_dir / soname, ec)) return true;
  if (loads_libcuda(info) && fs::exists(host_dir / "libcuda.so.1", ec)) return true;
  std::string_view own = info.soname ? std::string_view(*info.soname) : basename_view(info.path);
  return is_cuda_library(own) &&
         any_entry_named(host_dir, [](const std::string& name) { return is_cuda_library(name); });
}

std::string trimmed_dir(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// A library the loader found in `dir` or in one of the subdirectories it
// searches below it (glibc-hwcaps/X, or before glibc 2.37 tls/, x86_64/, ...:
// at most three levels) — unless that subdirectory is a runpath entry itself.
bool resolved_through(const std::set<std::string>& used, const std::string& dir, const std::set<std::string>& entries) {
  if (used.count(dir)) return true;
  std::string prefix = dir == "/" ? "/" : dir + "/";
  for (auto it = used.lower_bound(prefix); it != used.end() && it->starts_with(prefix); ++it) {
    std::string_view below = std::string_view(*it).substr(prefix.size());
    if (!entries.count(*it) && std::count(below.begin(), below.end(), '/') < 3) return true;
  }
  return false;
}

}  // namespace

void version_mix(const DependencyTree& tree, const AddFinding& add) {
  // Two SONAME majors of one CUDA library in one process.
  std::map<std::string, std::map<std::string, size_t>> majors;  // base -> major -> object
  // Two CUDA releases among the cuda_* store paths the closure loads from.
  std::map<std::string, std::pair<std::string, size_t>> releases;  // release -> (package, object)
  for (size_t i = 1; i < tree.objects.size(); ++i) {
    const auto& o = tree.objects[i];
    std::string_view name = o.info->soname ? std::string_view(*o.info->soname) : basename_view(o.path);
    if (is_cuda_library(name))  // checked first: most objects are not, and need no strings built
      if (auto sm = soname_major(name)) majors[sm->first].emplace(sm->second, i);
    if (auto store = parse_store_path(o.path))
      if (auto release = cuda_release_of(*store)) releases.emplace(*release, std::make_pair(store->name, i));
  }
  for (const auto& [base, by_major] : majors) {
    if (by_major.size() < 2) continue;
    std::string parts;
    std::vector<std::string> libraries;
    for (const auto& [major, object] : by_major) {
      libraries.push_back(fmt::format("{}.so.{}", base, major));
      parts += fmt::format("{}{} ({}; {})", parts.empty() ? "" : " and ", libraries.back(), tree.objects[object].path,
                           how_reached(tree, object));
    }
    add(CheckRule::CudaVersionMix, {fmt::format("loads {}", parts), libraries});
  }
  if (releases.size() > 1) {
    std::string parts;
    std::vector<std::string> libraries;
    for (const auto& [release, where] : releases) {
      const auto& o = tree.objects[where.second];
      libraries.push_back(o.info->soname ? *o.info->soname : std::string(basename_view(o.path)));
      parts += fmt::format("{}CUDA {} ({} at {}; {})", parts.empty() ? "" : " and ", release, where.first, o.path,
                           how_reached(tree, where.second));
    }
    add(CheckRule::CudaVersionMix, {fmt::format("loads from two CUDA package sets: {}", parts), libraries});
  }
}

void entry_bloat(const std::string& entry, const AddFinding& add) {
  auto store = parse_store_path(entry);
  if (store) {
    static const std::set<std::string> build_outputs = {"dev", "static", "doc", "devdoc", "man", "info"};
    if (build_outputs.count(store->output))
      add(CheckRule::ClosureBloat,
          fmt::format("'{}' points into the -{} output of {}: a build-time output becomes a runtime "
                      "dependency",
                      entry, store->output, store->name));
    if (store->name == "cudatoolkit")
      add(CheckRule::ClosureBloat,
          fmt::format("'{}' points into the monolithic cudatoolkit (gigabytes): depend on the split "
                      "cudaPackages.* libraries instead",
                      entry));
    static const std::set<std::string> compilers = {"gcc",      "gcc-unwrapped",     "clang", "clang-unwrapped",
                                                    "binutils", "binutils-unwrapped"};
    if (compilers.count(store->name))
      add(CheckRule::ClosureBloat,
          fmt::format("'{}' points into the compiler {}: link its runtime library (e.g. libstdc++ "
                      "from gcc.cc.lib) instead",
                      entry, store->name));
  } else if (entry.find("/lib/gcc/") != std::string::npos) {
    add(CheckRule::ClosureBloat, fmt::format("'{}' is a compiler directory", entry));
  }
}

void entry_stub(const std::string& entry, const fs::path& host_dir, const AddFinding& add) {
  for (const char* name : {"libcuda.so.1", "libcuda.so"}) {
    auto info = read_elf_info(host_dir / name);
    if (info && is_stub_libcuda(*info)) {
      add(CheckRule::RuntimeStub,
          fmt::format("'{}' holds {}, the toolkit's stub ({} bytes of code): a program would load it "
                      "instead of the driver's and fail every CUDA call",
                      entry, name, info->code_size));
      return;
    }
  }
}

std::optional<DependencyTree> without_ld_library_path(const fs::path& file, const SearchEnvironment& env) {
  if (env.ld_library_path.empty()) return std::nullopt;
  SearchEnvironment without = env;
  without.ld_library_path.clear();
  auto tree = resolve_tree(file, without);
  if (!tree) return std::nullopt;
  return std::move(*tree);
}

void unused_entries(const DependencyTree& tree, const CheckOptions& o, const AddFinding& add) {
  if (tree.objects.empty()) return;
  const LoadedObject& root = tree.objects[0];
  if (!root.info->runpath && !root.info->rpath) return;
  std::string runpath = root.info->runpath.value_or(root.info->rpath.value_or(""));
  std::set<std::string> used;  // directories a resolution of the root (or a dlopen by it) went through
  for (const auto& e : tree.edges)
    if (e.resolution.path && (e.resolution.via == FoundVia::Runpath || e.resolution.via == FoundVia::Rpath) &&
        e.resolution.via_object == root.path)
      used.insert(dirname_of(*e.resolution.path));
  std::string origin = dirname_of(root.path);
  std::set<std::string> entry_dirs;
  for (const auto& entry : split_runpath(runpath))
    if (!names_loader_tokens(entry) || !tree.lib_token.empty())
      entry_dirs.insert(trimmed_dir(expand_dynamic_tokens(entry, {origin, tree.lib_token, tree.platform_token})));
  for (const auto& entry : split_runpath(runpath)) {
    if (entry.empty() || std::find(o.driver_dirs.begin(), o.driver_dirs.end(), entry) != o.driver_dirs.end()) continue;
    // $ORIGIN/... is the file's own package: libraries there may be dlopened at any time.
    bool in_own_package = names_origin(entry);
    if (names_loader_tokens(entry) && tree.lib_token.empty()) continue;  // the loader's values are unknown
    std::string dir = trimmed_dir(expand_dynamic_tokens(entry, {origin, tree.lib_token, tree.platform_token}));
    // A relative entry names a different directory in every working directory: relative-entry reports it.
    if (dir.empty() || dir[0] != '/') continue;
    if (dir == origin || resolved_through(used, dir, entry_dirs)) continue;
    fs::path host = under_root(o.env.root, dir);
    std::error_code ec;
    if (!fs::is_directory(host, ec)) continue;  // missing-entry reports those
    if (is_compat_layer(entry, host, o.driver_dirs) || may_dlopen_from(*root.info, host)) continue;
    if (in_own_package && holds_a_library(host)) continue;
    add(CheckRule::UnusedEntry,
        fmt::format("'{}' resolves none of the file's libraries (runpatch-patchelf --shrink-rpath would drop it){}",
                    entry, kept_alive(entry, host, root.path)));
  }
}

void shadowing(const DependencyTree& tree, const DependencyTree& by_runpath, const AddFinding& add) {
  // Compare by (requester, name): what LD_LIBRARY_PATH chose against what the runpath would have.
  std::map<std::pair<std::string, std::string>, std::string> runpath_choice;
  for (const auto& e : by_runpath.edges)
    if (e.resolution.path && (e.resolution.via == FoundVia::Runpath || e.resolution.via == FoundVia::Rpath))
      runpath_choice[{by_runpath.objects[e.from].path, e.resolution.name}] = *e.resolution.path;
  for (const auto& e : tree.edges) {
    if (!e.resolution.path || e.resolution.via != FoundVia::LdLibraryPath) continue;
    auto it = runpath_choice.find({tree.objects[e.from].path, e.resolution.name});
    if (it == runpath_choice.end() || it->second == *e.resolution.path) continue;
    add(CheckRule::LdLibraryPathShadowing,
        {fmt::format(
             "{} for {}: LD_LIBRARY_PATH gives {}, the runpath would give {}{}", e.resolution.name,
             tree.objects[e.from].path, *e.resolution.path, it->second,
             e.resolution.name.rfind("libcuda.so", 0) == 0 ? " (a cuda_compat or driver choice is overridden)" : ""),
         {e.resolution.name}});
  }
}

}  // namespace runpatch::check_rules_nix
