// Breadth-first dependency resolution following glibc's _dl_map_object:
// loaded names, names with a slash, DT_RPATH of the loader chain (only while
// the requester has no DT_RUNPATH), LD_LIBRARY_PATH, DT_RUNPATH of the
// requester, ld.so.cache, default directories (both skipped for NODEFLIB);
// or musl's load_library for a musl model (search_musl).
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <deque>
#include <tuple>
#include <unordered_map>

#include "resolving/loader_pick.hpp"
#include "resolving/machine_defaults.hpp"
#include "runpatch/cuda/cuda.hpp"
#include "runpatch/reading/elf_types.hpp"
#include "runpatch/resolving/ld_so_cache.hpp"
#include "runpatch/reading/loader_paths.hpp"
#include "runpatch/resolving/resolve.hpp"

namespace runpatch {

namespace fs = std::filesystem;

std::string SearchAttempt::outcome_text() const {
  switch (outcome) {
    case AttemptOutcome::Found: return "found";
    case AttemptOutcome::AlsoFound: return "also found";
    case AttemptOutcome::NoSuchFile: return "no such file";
    case AttemptOutcome::NotLoadable: return "not loadable: " + detail;
    case AttemptOutcome::WrongClassOrMachine: return "wrong class or machine: " + detail;
    case AttemptOutcome::NotInCache: return "not listed";
  }
  return "?";
}

std::string found_via_name(FoundVia via) {
  switch (via) {
    case FoundVia::AlreadyLoaded: return "already loaded";
    case FoundVia::DirectPath: return "path";
    case FoundVia::Rpath: return "rpath";
    case FoundVia::LdLibraryPath: return "LD_LIBRARY_PATH";
    case FoundVia::Runpath: return "runpath";
    case FoundVia::LdSoCache: return "ld.so.cache";
    case FoundVia::DefaultDirs: return "default path";
    case FoundVia::NotFound: return "not found";
  }
  return "?";
}

bool DependencyTree::all_found() const {
  return std::all_of(edges.begin(), edges.end(),
                     [](const DependencyEdge& e) { return e.dlopen || e.resolution.path.has_value(); });
}

bool loadable_together(const ElfIdentity& object, const ElfIdentity& candidate) {
  auto gnu_or_sysv = [](uint8_t abi) { return abi == elf::ELFOSABI_SYSV || abi == elf::ELFOSABI_GNU; };
  return object.elf_class == candidate.elf_class && object.byte_order == candidate.byte_order &&
         object.machine == candidate.machine &&
         (candidate.osabi == object.osabi || (gnu_or_sysv(candidate.osabi) && gnu_or_sysv(object.osabi)));
}

std::vector<DlopenDependency> dlopen_dependencies(const ElfInfo& info) {
  std::vector<DlopenDependency> deps = info.dlopen;
  if (auto implied = undeclared_cuda_dlopen(info)) deps.push_back(std::move(*implied));
  return deps;
}

namespace {

bool compatible(const ElfIdentity& want, const ElfIdentity& have) { return loadable_together(want, have); }

}  // namespace

struct ResolutionSession::State {
  // Lookups by std::string_view without building a std::string key.
  struct TextHash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  template <typename Value>
  using TextMap = std::unordered_map<std::string, Value, TextHash, std::equal_to<>>;

  SearchEnvironment env;
  TextMap<LoaderModel> models;                     // by LoaderPick::key: a loader's files are read once
  TextMap<std::optional<LdSoCache>> ld_so_caches;  // by host path; none when missing or unreadable
  TextMap<bool> dir_exists;
  TextMap<Expected<std::shared_ptr<const ElfInfo>>> infos;  // by host path
  TextMap<std::optional<struct stat>> stats;                // by host path, following links
  // Searches that do not depend on the tree they are made in (see
  // Resolver::reusable), by root identity, requester and name: a session's
  // trees mostly repeat the same requests (libc.so.6 of libstdc++.so.6).
  struct Search {
    Resolution resolution;
    // The file found, as link() needs it: known when the search is reused.
    std::optional<std::pair<dev_t, ino_t>> inode;
    std::shared_ptr<const ElfInfo> info;
    std::optional<size_t> loaded;  // FoundVia::AlreadyLoaded: the tree's object
  };
  TextMap<Search> searches;
  TextMap<std::vector<LdSoCacheEntry>> ld_so_cache_lookups;  // ld.so.cache lookups by cache path and name
  TextMap<fs::path> canonical_dirs;
  std::deque<std::pair<ElfIdentity, MachineDefaults>> defaults;  // by root identity; a deque keeps references

  const std::optional<struct stat>& stat_of(const std::string& host) {
    auto it = stats.find(host);
    if (it == stats.end()) {
      struct stat st {};
      it = stats.emplace(host, ::stat(host.c_str(), &st) == 0 ? std::optional<struct stat>(st) : std::nullopt).first;
    }
    return it->second;
  }

  // fs::weakly_canonical, with each directory resolved once per session: it
  // costs a readlink per component, and a session's files share directories.
  fs::path canonical(const fs::path& file) {
    std::error_code ec;
    fs::path absolute = fs::absolute(file, ec);
    fs::path name = absolute.filename();
    struct stat st {};
    if (name.empty() || name == "." || name == ".." || ::lstat(absolute.c_str(), &st) != 0 || S_ISLNK(st.st_mode))
      return fs::weakly_canonical(absolute, ec);
    auto dir = canonical_dirs.find(absolute.parent_path().native());
    if (dir == canonical_dirs.end())
      dir = canonical_dirs.emplace(absolute.parent_path().native(), fs::weakly_canonical(absolute.parent_path(), ec))
                .first;
    return dir->second / name;
  }

  const LoaderModel& model_for(const ElfInfo& info, const std::string& view) {
    LoaderPick pick = pick_loader(info, view, env);
    std::string key = pick.key();
    auto it = models.find(std::string_view(key));
    if (it == models.end()) it = models.emplace(std::move(key), build_loader_model(pick, env)).first;
    return it->second;
  }

  const LdSoCache* ld_so_cache_at(const fs::path& path) {
    auto it = ld_so_caches.find(path.native());
    if (it == ld_so_caches.end()) {
      auto opened = LdSoCache::open(path);
      it = ld_so_caches.emplace(path.native(), opened ? std::optional<LdSoCache>(std::move(*opened)) : std::nullopt)
               .first;
    }
    return it->second ? &*it->second : nullptr;
  }

  const MachineDefaults& defaults_of(const ElfIdentity& identity) {
    for (const auto& [id, known] : defaults)
      if (id == identity) return known;
    return defaults.emplace_back(identity, machine_defaults(identity)).second;
  }

  const Expected<std::shared_ptr<const ElfInfo>>& info_of(const std::string& host) {
    auto it = infos.find(host);
    if (it == infos.end()) {
      Expected<std::shared_ptr<const ElfInfo>> shared = [&]() -> Expected<std::shared_ptr<const ElfInfo>> {
        RUNPATCH_TRY(ElfInfo info, read_elf_info(fs::path(host)));
        return std::make_shared<const ElfInfo>(std::move(info));
      }();
      it = infos.emplace(host, std::move(shared)).first;
    }
    return it->second;
  }
};

namespace {

// Which rule a probe belongs to, and what a hit through it is recorded as;
// the text is formatted only when attempts are recorded, because most
// callers (a plain `tree`) never show them.
struct Rule {
  const char* label;
  FoundVia via;
  const std::string* object = nullptr;  // whose rpath/runpath
  std::string text() const { return object ? std::string(label) + " " + *object : std::string(label); }
};

class Resolver {
 public:
  explicit Resolver(ResolutionSession::State& state) : state_(state), env_(state.env) {}

  Expected<DependencyTree> run(const fs::path& file) {
    RUNPATCH_TRY(ElfInfo info, read_elf_info(file));
    identity_ = info.identity;
    std::string view = loader_view(file);
    model_ = &state_.model_for(info, view);
    tree_.loader = *model_;
    LoadedObject root{std::move(view), std::make_shared<const ElfInfo>(std::move(info)), std::nullopt, 0};
    setup_defaults();
    tree_.objects.reserve(32);
    tree_.edges.reserve(64);
    names_.reserve(32);
    tree_.objects.push_back(std::move(root));
    names_.push_back({});
    record_inode(0, file.string());
    load_interpreter();
    // The names outlive the tree's construction (the session's environment, the shared ElfInfo), so names_ may view
    // them.
    for (const auto& name : env_.preload) link(0, name, find(tree_, 0, name));
    for (size_t i = 0; i < tree_.objects.size(); ++i)
      for (const auto& name : tree_.objects[i].info->needed) link(i, name, find(tree_, i, name));
    // glibc's dlopen searches with the calling object's own DT_RUNPATH, like
    // a DT_NEEDED of it; musl's with the program's.
    size_t loaded = tree_.objects.size();
    for (size_t i = 0; i < loaded; ++i)
      for (const auto& dep : dlopen_dependencies(*tree_.objects[i].info)) {
        Resolution r;
        for (const auto& soname : dep.sonames) {
          r = resolve(tree_, musl() ? 0 : i, soname);
          if (r.path) break;
        }
        DependencyEdge edge{i, std::move(r), std::nullopt, true, dep.feature, dep.priority};
        const Resolution& found = edge.resolution;
        for (size_t k = 0; found.path && k < tree_.objects.size(); ++k)
          if (tree_.objects[k].path == *found.path) edge.to = k;
        tree_.edges.push_back(std::move(edge));
      }
    if (names_loader_tokens(effective_runpath(*tree_.objects[0].info))) {
      need_loader_facts();
      tree_.lib_token = lib_;
      tree_.platform_token = platform_;
    }
    return std::move(tree_);
  }

  Resolution resolve(const DependencyTree& tree, size_t requester, const std::string& name) {
    return find(tree, requester, name).resolution;
  }

 private:
  using Search = ResolutionSession::State::Search;

  Search find(const DependencyTree& tree, size_t requester, const std::string& name) {
    if (identity_.machine == 0) {
      identity_ = tree.objects[0].info->identity;
      // This session's environment decides (it may read notes where the tree's did not).
      model_ = &state_.model_for(*tree.objects[0].info, tree.objects[0].path);
      for (size_t i = 1; i < tree.objects.size() && !interpreter_index_; ++i)
        if (tree.objects[i].path == model_->interpreter) interpreter_index_ = i;
      setup_defaults();
    }
    if (musl() && interpreter_index_ && is_musl_self(name)) return loaded_as(tree, *interpreter_index_, name);
    for (size_t i = 0; i < tree.objects.size() && i < names_.size(); ++i)
      if (std::find(names_[i].begin(), names_[i].end(), name) != names_[i].end() || tree.objects[i].path == name)
        return loaded_as(tree, i, name);
    if (!reusable(tree, requester)) return {search_all(tree, requester, name), std::nullopt, nullptr, std::nullopt};
    search_key_.resize(identity_key_size_);
    search_key_.append(tree.objects[requester].path).push_back('\0');
    search_key_.append(name);
    auto known = state_.searches.find(std::string_view(search_key_));
    if (known == state_.searches.end()) {
      Search search{search_all(tree, requester, name), std::nullopt, nullptr, std::nullopt};
      if (search.resolution.path) {
        std::string host = host_path(*search.resolution.path);
        if (const auto& st = state_.stat_of(host)) search.inode.emplace(st->st_dev, st->st_ino);
        if (const auto& info = state_.info_of(host)) search.info = *info;
      }
      known = state_.searches.emplace(search_key_, std::move(search)).first;
    }
    return known->second;
  }

  static Search loaded_as(const DependencyTree& tree, size_t object, const std::string& name) {
    Search loaded;
    Resolution& r = loaded.resolution;
    r.name = name;
    r.path = tree.objects[object].path;
    r.via = FoundVia::AlreadyLoaded;
    r.via_object = tree.objects[object].path;
    loaded.loaded = object;
    return loaded;
  }

  bool musl() const { return model_->kind == LoaderKind::Musl; }

  // musl's loader is also its libc: libc, libpthread, librt, libm, libdl,
  // libutil and libxnet (any suffix after the dot) and its own name are it.
  bool is_musl_self(const std::string& name) const {
    if (name == model_->interpreter) return true;
    if (name.rfind("lib", 0) != 0) return false;
    for (std::string_view part : {"c.", "pthread.", "rt.", "m.", "dl.", "util.", "xnet."})
      if (name.compare(3, part.size(), part) == 0) return true;
    return false;
  }

  // Whether what requester finds for a name depends on nothing but the
  // session, the root's identity and the requester (path and contents): not
  // when DT_RPATH of the loader chain takes part, nor when LD_LIBRARY_PATH
  // expands the root's $ORIGIN.
  bool reusable(const DependencyTree& tree, size_t requester) const {
    if (musl()) {  // musl searches the runpath of every object up the loader chain
      for (auto l = tree.objects[requester].loader; l; l = tree.objects[*l].loader)
        if (tree.objects[*l].info->runpath || tree.objects[*l].info->rpath) return false;
      return true;
    }
    for (const auto& entry : env_.ld_library_path)
      if (entry.find('$') != std::string::npos) return false;
    if (tree.objects[requester].info->runpath) return true;
    for (std::optional<size_t> l = requester; l; l = tree.objects[*l].loader)
      if (tree.objects[*l].info->rpath) return false;
    return !tree.objects[0].info->rpath;
  }

  // Every rule after the loaded objects, in the loader's order.
  Resolution search_all(const DependencyTree& tree, size_t requester, const std::string& name) {
    Resolution r;
    r.name = name;
    const LoadedObject& req = tree.objects[requester];
    if (musl()) return search_musl(tree, requester, name, r);
    // Each search returns true once the name is found, unless every
    // candidate is wanted (then it goes on and only the first hit counts).
    if (name.find('/') != std::string::npos) {
      for (const auto& path : expand(name, req))
        if (probe(path, Rule{"path in DT_NEEDED", FoundVia::DirectPath}, r)) return r;
      return r;
    }
    if (!req.info->runpath) {
      std::vector<bool> visited(tree.objects.size(), false);
      for (std::optional<size_t> l = requester; l; l = tree.objects[*l].loader) {
        visited[*l] = true;
        if (search_rpath_of(tree, *l, name, r)) return r;
      }
      if (!visited[0] && search_rpath_of(tree, 0, name, r)) return r;
    }
    if (search(env_.ld_library_path, tree.objects[0], name, Rule{"LD_LIBRARY_PATH", FoundVia::LdLibraryPath}, r))
      return r;
    if (req.info->runpath) {
      const ResolutionCacheEntry* noted =
          model_->reads_resolution_cache_note ? note_locations_for(*req.info, name) : nullptr;
      if (noted ? search_note_locations(*noted, req, name, r)
                : search(split_runpath(*req.info->runpath), req, name, Rule{"runpath of", FoundVia::Runpath, &req.path},
                         r))
        return r;
    }
    if (req.info->nodeflib()) return r;
    if (search_ld_so_cache(name, r)) return r;
    need_loader_facts();
    search(default_dirs_, req, name, Rule{"default path", FoundVia::DefaultDirs}, r);
    return r;
  }

  // musl's load_library: LD_LIBRARY_PATH, then the runpath (DT_RUNPATH, or
  // DT_RPATH without one) of the requester and of each object up its loader
  // chain, then musl's path; empty entries are skipped, no hwcaps, no cache,
  // and the first file that opens ends the search (see probe).
  Resolution& search_musl(const DependencyTree& tree, size_t requester, const std::string& name, Resolution& r) {
    if (name.find('/') != std::string::npos) {
      probe(name, Rule{"path in DT_NEEDED", FoundVia::DirectPath}, r);
      return r;
    }
    if (search_plain(env_.ld_library_path, name, Rule{"LD_LIBRARY_PATH", FoundVia::LdLibraryPath}, r)) return r;
    for (std::optional<size_t> l = requester; l; l = tree.objects[*l].loader) {
      const LoadedObject& o = tree.objects[*l];
      bool runpath = o.info->runpath.has_value();
      const std::optional<std::string>& list = runpath ? o.info->runpath : o.info->rpath;
      // musl expands $ORIGIN and ${ORIGIN} only; any other '$' voids the object's whole list.
      if (!list || !only_origin_tokens(*list)) continue;
      Rule rule = runpath ? Rule{"runpath of", FoundVia::Runpath, &o.path} : Rule{"rpath of", FoundVia::Rpath, &o.path};
      if (search_plain(split_search_path_skipping_empty(expand_origin(*list, dirname_of(o.path))), name, rule, r))
        return r;
    }
    search_plain(model_->default_dirs, name,
                 Rule{"musl path from", FoundVia::DefaultDirs, &model_->default_dirs_source}, r);
    return r;
  }

  static bool only_origin_tokens(const std::string& list) {
    for (size_t at = list.find('$'); at != std::string::npos; at = list.find('$', at + 1))
      if (list.compare(at, 7, "$ORIGIN") != 0 && list.compare(at, 9, "${ORIGIN}") != 0) return false;
    return true;
  }

  static std::vector<std::string> split_search_path_skipping_empty(const std::string& list) {
    std::vector<std::string> dirs;
    for (auto& entry : split_search_path(list))
      if (!entry.empty()) dirs.push_back(std::move(entry));
    return dirs;
  }

  // Directories as they are: no tokens, no hwcaps; empty entries skipped (musl).
  bool search_plain(const std::vector<std::string>& dirs, const std::string& name, const Rule& rule, Resolution& r) {
    for (const auto& dir : dirs)
      if (!dir.empty() && probe(dir + "/" + name, rule, r)) return true;
    return false;
  }

  void setup_defaults() {
    search_key_.clear();
    for (uint64_t field : {uint64_t(identity_.elf_class), uint64_t(identity_.byte_order), uint64_t(identity_.machine),
                           uint64_t(identity_.osabi), uint64_t(identity_.abiversion), uint64_t(identity_.flags)})
      search_key_.append(std::to_string(field)).push_back(',');
    search_key_.append(model_->key()).push_back('\0');  // searches differ per loader model
    identity_key_size_ = search_key_.size();
  }

  // Default dirs, $LIB and $PLATFORM: asked of the host loader (once, lazily) or
  // derived from the machine. Most trees never need them: ld.so.cache answers.
  void need_loader_facts() {
    if (loader_facts_ready_) return;
    loader_facts_ready_ = true;
    env_.complete_from_host_loader();
    const MachineDefaults& defaults = state_.defaults_of(identity_);
    default_dirs_ = env_.default_dirs.value_or(defaults.default_dirs);
    platform_ = env_.platform.empty() ? defaults.platform : env_.platform;
    lib_ = env_.lib.empty() ? (defaults.multiarch.empty() ? "lib" : "lib/" + defaults.multiarch) : env_.lib;
    if (model_->kind != LoaderKind::HostGlibc) {  // a glibc at its own prefix: no multiarch, its own lib directory
      default_dirs_ = model_->default_dirs;
      lib_ = "lib";
    }
  }

  // The interpreter is mapped before anything else; its SONAME satisfies libc's DT_NEEDED on it.
  void load_interpreter() {
    const std::string& interp = model_->interpreter;
    if (interp.empty()) return;
    const auto& info = state_.info_of(host_path(interp));
    if (!info || !compatible(identity_, (*info)->identity)) return;
    tree_.objects.push_back({interp, *info, std::nullopt, 1});
    names_.push_back({});
    interpreter_index_ = tree_.objects.size() - 1;
    if ((*info)->soname && !musl()) names_.back().push_back(*(*info)->soname);
    record_inode(tree_.objects.size() - 1, host_path(interp));
  }

  void link(size_t from, std::string_view name, Search&& found) {
    DependencyEdge edge{from, std::move(found.resolution), std::nullopt};
    const Resolution& r = edge.resolution;
    if (found.loaded) {
      edge.to = found.loaded;
      names_[*found.loaded].push_back(name);
    } else if (r.path) {
      if (!found.info) {  // not a reused search: look the file up
        std::string host = host_path(*r.path);
        if (const auto& st = state_.stat_of(host)) found.inode.emplace(st->st_dev, st->st_ino);
        if (const auto& info = state_.info_of(host)) found.info = *info;
      }
      std::optional<size_t> existing;
      for (const auto& [dev, ino, index] : inodes_)
        if (found.inode && dev == found.inode->first && ino == found.inode->second) existing = index;
      for (size_t i = 0; !existing && i < tree_.objects.size(); ++i)
        if (tree_.objects[i].path == *r.path) existing = i;
      if (existing) {
        edge.to = existing;
        names_[*existing].push_back(name);
      } else if (found.info) {
        tree_.objects.push_back({*r.path, found.info, from, tree_.objects[from].depth + 1});
        names_.push_back({name});
        // musl knows an object by the name it was searched under, never by its SONAME.
        if (found.info->soname && !musl()) names_.back().push_back(*found.info->soname);
        edge.to = tree_.objects.size() - 1;
        if (found.inode) inodes_.emplace_back(found.inode->first, found.inode->second, *edge.to);
      }
    }
    tree_.edges.push_back(std::move(edge));
  }

  void record_inode(size_t index, const std::string& host) {
    if (const auto& st = state_.stat_of(host)) inodes_.emplace_back(st->st_dev, st->st_ino, index);
  }

  bool search_rpath_of(const DependencyTree& tree, size_t object, const std::string& name, Resolution& r) {
    const auto& o = tree.objects[object];
    if (!o.info->rpath || o.info->runpath) return false;  // DT_RUNPATH present: DT_RPATH is ignored
    return search(split_runpath(*o.info->rpath), o, name, Rule{"rpath of", FoundVia::Rpath, &o.path}, r);
  }

  bool search(const std::vector<std::string>& entries, const LoadedObject& owner, const std::string& name,
              const Rule& rule, Resolution& r) {
    for (const auto& entry : entries)
      for (const auto& dir : expand(entry.empty() ? "." : entry, owner)) {
        if (is_directory(dir + "/glibc-hwcaps")) {
          need_loader_facts();
          for (const auto& sub : env_.hwcaps_subdirs) {
            std::string hw = dir + "/glibc-hwcaps/" + sub;
            if (is_directory(hw) && probe(hw + "/" + name, rule, r)) return true;
          }
        }
        if (model_->searches_legacy_hwcaps_subdirs && search_legacy_subdirs(dir, name, rule, r)) return true;
        if (probe((dir == "/" ? "" : dir) + "/" + name, rule, r)) return true;
      }
    return false;
  }

  // glibc < 2.37: tls/, the platform's and the hwcaps' subdirectories, before the directory itself.
  bool search_legacy_subdirs(const std::string& dir, const std::string& name, const Rule& rule, Resolution& r) {
    need_loader_facts();
    std::string base = dir == "/" ? "" : dir;
    for (const auto& sub : env_.legacy_hwcaps_subdirs) {
      // Most directories have none of them: one cached look at the first component spares the rest.
      if (!is_directory(base + "/" + sub.substr(0, sub.find('/')))) continue;
      if (is_directory(base + "/" + sub) && probe(base + "/" + sub + "/" + name, rule, r)) return true;
    }
    return false;
  }

  static const ResolutionCacheEntry* note_locations_for(const ElfInfo& info, const std::string& name) {
    if (!info.resolution_cache || !info.resolution_cache->defect.empty()) return nullptr;
    for (const auto& entry : info.resolution_cache->entries)
      if (entry.needed == name) return &entry;
    return nullptr;
  }

  // The resolution-cache note's locations in order: "=path" is opened as it is, "?dir" searched like a runpath entry.
  bool search_note_locations(const ResolutionCacheEntry& entry, const LoadedObject& owner, const std::string& name,
                             Resolution& r) {
    Rule rule{"resolution cache of", FoundVia::Runpath, &owner.path};
    for (const auto& location : entry.locations) {
      std::string rest = location.substr(1);
      if (location[0] == '=' ? probe(rest, rule, r) : search({rest}, owner, name, rule, r)) return true;
    }
    return false;
  }

  // The model's ld.so.cache; a missing or unreadable one is skipped, as the loader
  // does (it never reads ld.so.conf: only ldconfig does).
  bool search_ld_so_cache(const std::string& name, Resolution& r) {
    if (!model_->ld_so_cache) return false;
    const LdSoCache* ld_so_cache = state_.ld_so_cache_at(*model_->ld_so_cache);
    if (!ld_so_cache) return false;
    ld_so_cache_key_.assign(model_->ld_so_cache->native()).push_back('\0');
    ld_so_cache_key_.append(name);
    auto entries = state_.ld_so_cache_lookups.find(std::string_view(ld_so_cache_key_));
    if (entries == state_.ld_so_cache_lookups.end())
      entries = state_.ld_so_cache_lookups.emplace(ld_so_cache_key_, ld_so_cache->lookup(name)).first;
    for (const auto& entry : entries->second)  // the cache's own order decides
      if (probe(entry.path, Rule{"ld.so.cache", FoundVia::LdSoCache}, r)) return true;
    // The lookup is a step of the search too (why shows it), though no file is opened.
    if (entries->second.empty() && env_.record_attempts)
      r.attempts.push_back(
          {model_->ld_so_cache->string(), AttemptOutcome::NotInCache, "ld.so.cache", "", FoundVia::LdSoCache});
    return false;
  }

  bool probe(const std::string& path, const Rule& rule, Resolution& r) {
    auto attempt = [&](AttemptOutcome outcome, std::string detail = {}) {
      if (env_.record_attempts) r.attempts.push_back({path, outcome, rule.text(), std::move(detail), rule.via});
    };
    std::string host = host_path(path);
    const auto& st = state_.stat_of(host);
    if (!st || !S_ISREG(st->st_mode)) {
      attempt(AttemptOutcome::NoSuchFile);
      return false;
    }
    const auto& loaded = state_.info_of(host);
    if (!loaded) {
      attempt(AttemptOutcome::NotLoadable, loaded.error().what + (musl() ? " (musl stops here)" : ""));
      return musl();
    }
    const ElfInfo* info = loaded->get();
    if (!compatible(identity_, info->identity)) {
      attempt(AttemptOutcome::WrongClassOrMachine,
              std::string(info->identity.elf_class == ElfClass::Elf64 ? "ELF64 " : "ELF32 ") +
                  machine_name(info->identity.machine) + (musl() ? " (musl stops here)" : ""));
      return musl();  // musl maps the first file that opens, and fails on a wrong one
    }
    if (r.path) {  // only when every candidate is wanted: the first hit stays the result
      attempt(AttemptOutcome::AlsoFound);
      return false;
    }
    attempt(AttemptOutcome::Found);
    r.path = path;
    r.via = rule.via;
    if (rule.object) r.via_object = *rule.object;
    return !env_.every_candidate;
  }

  // Dynamic string tokens; $LIB and $PLATFORM are asked of the loader only when used.
  std::vector<std::string> expand(const std::string& entry, const LoadedObject& owner) {
    if (names_loader_tokens(entry)) need_loader_facts();
    return {expand_dynamic_tokens(entry, {dirname_of(owner.path), lib_, platform_})};
  }

  // The loader's view of a host path: relative to root.
  std::string loader_view(const fs::path& file) const {
    fs::path absolute = state_.canonical(file);
    if (env_.root == "/" || env_.root.empty()) return absolute.string();
    fs::path root = state_.canonical(env_.root);
    auto rel = absolute.lexically_relative(root);
    if (rel.empty() || rel.native().rfind("..", 0) == 0) return absolute.string();
    return "/" + rel.string();
  }

  // Plain strings: this runs for every path tried, and fs::path splits into components.
  std::string host_path(const std::string& loader_path) const {
    if (host_root_ || loader_path.empty() || loader_path[0] != '/') return loader_path;
    std::string root = env_.root.string();
    while (!root.empty() && root.back() == '/') root.pop_back();
    return root + loader_path;
  }

  bool is_directory(const std::string& path) {
    auto it = state_.dir_exists.find(path);
    if (it != state_.dir_exists.end()) return it->second;
    const auto& st = state_.stat_of(host_path(path));
    bool yes = st && S_ISDIR(st->st_mode);
    state_.dir_exists[path] = yes;
    return yes;
  }

  ResolutionSession::State& state_;
  SearchEnvironment& env_;  // the session's: host loader facts are filled in on first need
  DependencyTree tree_;
  std::vector<std::vector<std::string_view>> names_;      // names each object satisfies
  std::vector<std::tuple<dev_t, ino_t, size_t>> inodes_;  // a tree has dozens of objects: a scan beats a map
  std::string search_key_;        // reused: building the key allocates nothing after the first tree
  size_t identity_key_size_ = 0;  // search_key_ starts with the root identity
  ElfIdentity identity_{};
  const LoaderModel* model_ = nullptr;  // owned by the session
  std::optional<size_t> interpreter_index_;
  std::string ld_so_cache_key_;
  std::vector<std::string> default_dirs_;
  std::string platform_, lib_;
  bool loader_facts_ready_ = false;
  bool host_root_ = env_.root.empty() || env_.root == "/";
};

}  // namespace

ResolutionSession::ResolutionSession(SearchEnvironment env) : state_(std::make_unique<State>()) {
  state_->env = std::move(env);
}
ResolutionSession::~ResolutionSession() = default;

Expected<DependencyTree> ResolutionSession::resolve_tree(const fs::path& file) { return Resolver(*state_).run(file); }

Resolution ResolutionSession::resolve_name(const DependencyTree& tree, size_t requester, const std::string& name) {
  return Resolver(*state_).resolve(tree, requester, name);
}

Expected<DependencyTree> resolve_tree(const fs::path& file, const SearchEnvironment& env) {
  return ResolutionSession(env).resolve_tree(file);
}

Resolution resolve_name(const DependencyTree& tree, size_t requester, const std::string& name,
                        const SearchEnvironment& env) {
  return ResolutionSession(env).resolve_name(tree, requester, name);
}

}  // namespace runpatch
