#include "runpatch/auto_patchelf.hpp"

#include <fnmatch.h>
#include <sys/stat.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "runpatch/mapped_file.hpp"
#include "runpatch/resolve.hpp"
#include "runpatch/runpath_ops.hpp"
#include "runpatch/scan.hpp"

namespace runpatch {

namespace fs = std::filesystem;

bool AutoPatchelfResult::failed() const {
  return std::any_of(missing.begin(), missing.end(), [](const MissingDependency& m) { return !m.ignored; }) ||
         std::any_of(files.begin(), files.end(), [](const AutoPatchedFile& f) { return f.error.has_value(); });
}

namespace {

bool osabi_compatible(uint8_t a, uint8_t b) { return a == b || a == 0 || b == 0; }  // SYSV goes with all

// Libraries by (name, machine): file names and SONAMEs, in indexing order.
class LibraryIndex {
 public:
  void add_tree(const fs::path& given, bool recurse, bool follow_runpaths) {
    std::vector<fs::path> files;
    std::error_code ec;
    fs::path root = fs::absolute(given, ec);  // runpath entries must never be relative
    if (fs::is_directory(root, ec)) {
      if (recurse) {
        for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
             !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
          files.push_back(it->path());
      } else {
        for (const auto& e : fs::directory_iterator(root, ec)) files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());
    } else {
      files.push_back(root);
    }
    for (const auto& f : files) add_file(f, follow_runpaths);
    while (!pending_dirs_.empty()) {
      fs::path dir = pending_dirs_.front();
      pending_dirs_.pop_front();
      add_tree(dir, false, follow_runpaths);
    }
  }

  std::optional<std::string> find(const std::string& name, const ElfIdentity& want) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) return std::nullopt;
    for (const auto& [dir, id] : it->second)
      if (id.machine == want.machine && id.elf_class == want.elf_class && osabi_compatible(id.osabi, want.osabi))
        return dir;
    return std::nullopt;
  }

 private:
  void add_file(const fs::path& path, bool follow_runpaths) {
    std::string name = path.filename().string();
    if (name.find(".so") == std::string::npos) return;
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) return;  // follows symlinks
    auto info = read_elf_info(path);
    if (!info || !info->has_dynamic) return;  // not ELF, or a separate debug file
    // A symlinked library counts in the directory of its link name: the name the
    // loader will look up there (and a runpath that stays inside this output).
    fs::path dir = path.parent_path();
    record(name, dir.string(), info->identity);
    if (info->soname && *info->soname != name) record(*info->soname, dir.string(), info->identity);
    if (!follow_runpaths) return;
    for (const auto& entry : split_runpath(effective_runpath(*info)))
      if (!entry.empty() && entry.find("$ORIGIN") == std::string::npos && entry.find("${ORIGIN}") == std::string::npos &&
          followed_.insert(entry).second)
        pending_dirs_.push_back(entry);
  }

  void record(const std::string& name, const std::string& dir, const ElfIdentity& id) {
    auto& list = entries_[name];
    for (const auto& [d, i] : list)
      if (d == dir && i == id) return;
    list.emplace_back(dir, id);
  }

  std::map<std::string, std::vector<std::pair<std::string, ElfIdentity>>> entries_;
  std::deque<fs::path> pending_dirs_;
  std::set<std::string> followed_;
};

bool matches_any(const std::vector<std::string>& globs, const std::string& name) {
  return std::any_of(globs.begin(), globs.end(),
                     [&](const std::string& g) { return ::fnmatch(g.c_str(), name.c_str(), 0) == 0; });
}

}  // namespace

AutoPatchelfResult auto_patchelf(const AutoPatchelfOptions& o) {
  LibraryIndex index;
  for (const auto& p : o.paths) index.add_tree(p, o.recurse, !o.ignore_existing);
  for (const auto& p : o.libs) index.add_tree(p, false, !o.ignore_existing);

  std::optional<ElfIdentity> target;
  if (o.interpreter)
    if (auto interp = read_elf_info(*o.interpreter)) target = interp->identity;

  // Files to patch: regular files (not symlinks) that are ELF.
  std::vector<fs::path> files;
  for (const auto& p : o.paths) {
    std::error_code ec;
    if (fs::is_symlink(p, ec)) continue;
    if (!fs::is_directory(p, ec)) {
      files.push_back(p);
      continue;
    }
    if (o.recurse) {
      for (auto it = fs::recursive_directory_iterator(p, fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
        if (it->is_regular_file() && !it->is_symlink()) files.push_back(it->path());
    } else {
      for (const auto& e : fs::directory_iterator(p, ec))
        if (e.is_regular_file() && !e.is_symlink()) files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  files.erase(std::remove_if(files.begin(), files.end(), [](const fs::path& f) { return !has_elf_magic(f); }),
              files.end());

  AutoPatchelfResult result;
  result.files.resize(files.size());
  parallel_for(files.size(), o.threads, [&](size_t i) {
    AutoPatchedFile& out = result.files[i];
    out.path = files[i].string();
    auto info = read_elf_info(files[i]);
    if (!info) {
      out.error = info.error();
      return;
    }
    if (!info->has_dynamic) {
      out.skip_reason = "skipping " + out.path + " because it is statically linked";
      return;
    }
    if (info->phnum == 0) {
      out.skip_reason = "skipping " + out.path + " because it contains no segment";
      return;
    }
    if (target && (info->identity.machine != target->machine || info->identity.elf_class != target->elf_class)) {
      out.skip_reason = "skipping " + out.path + " because its architecture (" + machine_name(info->identity.machine) +
                        ") differs from target (" + machine_name(target->machine) + ")";
      return;
    }
    if (target && !osabi_compatible(info->identity.osabi, target->osabi)) {
      out.skip_reason = "skipping " + out.path + " because its OS ABI (" + osabi_name(info->identity.osabi) +
                        ") is not compatible with target (" + osabi_name(target->osabi) + ")";
      return;
    }
    bool executable = info->interpreter.has_value();
    std::vector<std::string> dirs;
    if (executable) dirs = o.runtime_dependencies;
    std::vector<AutoPatchedDependency> deps;
    for (const auto& n : info->needed) deps.push_back({n, std::nullopt, false});
    // Only declared dlopen notes: libcuda.so.1 comes from the driver at run time, not from the build.
    for (const auto& d : info->dlopen)
      for (const auto& s : d.sonames) deps.push_back({s, std::nullopt, d.priority != "required"});
    std::error_code ec;
    std::string own_dir = fs::absolute(files[i], ec).parent_path().string();
    for (auto& dep : deps) {
      if (dep.name.find('/') != std::string::npos) {
        if (fs::exists(dep.name, ec)) dep.found_dir = fs::path(dep.name).parent_path().string();
        continue;  // an absolute existing path needs no runpath
      }
      dep.found_dir = index.find(dep.name, info->identity);
      if (!dep.found_dir && o.libc_dir) {
        if (fs::exists(fs::path(*o.libc_dir) / dep.name, ec)) dep.found_dir = *o.libc_dir;
      }
      if (!dep.found_dir) continue;
      if (o.libc_dir && *dep.found_dir == *o.libc_dir && !o.keep_libc) continue;
      dirs.push_back(o.origin && *dep.found_dir == own_dir ? "$ORIGIN" : *dep.found_dir);
    }
    out.dependencies = deps;

    RunpathPolicy policy = o.layers;
    policy.keep_existing = false;  // auto-patchelf replaces the runpath
    policy.resolved_dirs = dirs;
    policy.append.insert(policy.append.end(), o.append_rpaths.begin(), o.append_rpaths.end());
    EditRequest request = o.extra;
    request.force_rpath = request.force_rpath || policy.force_rpath;
    std::string runpath = apply_policy(policy, effective_runpath(*info));
    if (!runpath.empty()) {  // as auto-patchelf.py: nothing found leaves the runpath alone
      out.runpath = runpath;
      request.runpath = set_runpath_update(runpath);
    }
    if (executable && o.interpreter) {
      request.interpreter = *o.interpreter;
      out.set_interpreter = true;
    }
    EditOptions options;
    options.dry_run = o.dry_run;
    options.in_place = o.in_place;
    auto edited = edit_elf_file(files[i], request, options);
    if (!edited) out.error = edited.error();
    else out.warnings = std::move(edited->warnings);
  });

  for (const auto& f : result.files)
    for (const auto& d : f.dependencies)
      if (!d.found_dir && !d.optional)
        result.missing.push_back({d.name, f.path, matches_any(o.ignore_missing, d.name)});
  return result;
}

}  // namespace runpatch
