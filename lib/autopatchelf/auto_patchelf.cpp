// auto-patchelf.py's rules (NixOS/nixpkgs, pkgs/by-name/au/auto-patchelf):
// what it indexes, in which order, how it matches a dependency, which files it
// skips and with which words, and the runpath it writes.
#include "runpatch/autopatchelf/auto_patchelf.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

#include "auto_patchelf_index.hpp"
#include "scanning/pathlib.hpp"
#include "pyelftools_names.hpp"
#include "runpatch/editing/commit_group.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/reading/elf_types.hpp"
#include "runpatch/editing/header_edit.hpp"
#include "runpatch/reading/mapped_file.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "runpatch/scanning/scan.hpp"

namespace runpatch {

bool AutoPatchelfResult::failed() const {
  return std::any_of(missing.begin(), missing.end(), [](const MissingDependency& m) { return !m.ignored; }) ||
         std::any_of(files.begin(), files.end(), [](const AutoPatchedFile& f) { return f.error.has_value(); });
}

std::string python_path_text(const std::string& text) { return pathlib::normalize(text); }

namespace {

// The first line of a nix-support file, without trailing blanks; nothing when unreadable or empty.
std::optional<std::string> nix_support_value(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
  return line;
}

}  // namespace

void use_nix_bintools(AutoPatchelfOptions& options, const std::filesystem::path& bintools) {
  if (!options.interpreter) options.interpreter = nix_support_value(bintools / "nix-support/dynamic-linker");
  if (auto libc = nix_support_value(bintools / "nix-support/orig-libc")) options.libc_dir = *libc + "/lib";
}

namespace {

// Where the glibc of an interpreter keeps libc.so.6: beside its ld.so, as in
// Nix's glibc; or beside the file a distribution's /lib64/ld-*.so link names
// (Debian: /lib/x86_64-linux-gnu).
std::optional<std::string> libc_dir_of(const std::string& interpreter) {
  std::vector<std::string> dirs = {pathlib::parent(interpreter)};
  std::error_code ec;
  auto resolved = std::filesystem::canonical(interpreter, ec);
  if (!ec) dirs.push_back(resolved.parent_path().string());
  for (const auto& dir : dirs)
    if (std::filesystem::is_regular_file(dir + "/libc.so.6", ec)) return dir;
  return std::nullopt;
}

}  // namespace

void use_nix_bintools(AutoPatchelfOptions& options) {
  if (const char* bintools = std::getenv("NIX_BINTOOLS")) {
    use_nix_bintools(options, bintools);
  } else if (options.interpreter && !options.libc_dir) {
    options.libc_dir = libc_dir_of(*options.interpreter);
  }
}

namespace {

struct Target {
  std::string arch;
  uint8_t osabi;
};

struct Context {
  const AutoPatchelfOptions& o;
  const AutoPatchelfIndex& index;
  std::optional<Target> target;
  CommitGroup* group = nullptr;  // the run's edits, committed together
};

std::optional<std::string> skip_reason(const ElfInfo& info, const std::string& path, const Context& c) {
  if (info.type == elf::ET_EXEC && !info.interpreter) return "skipping " + path + " because it is statically linked";
  if (info.phnum == 0) return "skipping " + path + " because it contains no segment";
  if (!c.target) return std::nullopt;
  std::string arch = pyelftools::machine_arch(info.identity.machine);
  if (arch != c.target->arch)
    return "skipping " + path + " because its architecture (" + arch + ") differs from target (" + c.target->arch + ")";
  if (!pyelftools::osabi_compatible(c.target->osabi, info.identity.osabi))
    return "skipping " + path + " because its OS ABI (" + pyelftools::osabi(info.identity.osabi) +
           ") is not compatible with target (" + pyelftools::osabi(c.target->osabi) + ")";
  return std::nullopt;
}

// One dependency: candidates tried in order, the first satisfied one wins (the script's four rules).
AutoPatchedDependency resolve(const std::vector<std::string>& candidates, const ElfInfo& info, bool keep_libc,
                              const Context& c, std::vector<std::string>& rpath) {
  std::string arch = pyelftools::machine_arch(info.identity.machine);
  for (const auto& raw : candidates) {
    std::string candidate = pathlib::normalize(raw);
    bool is_libc = c.o.libc_dir && pathlib::is_file(pathlib::join(*c.o.libc_dir, candidate));
    if (pathlib::is_absolute(candidate) && pathlib::is_file(candidate)) return {candidate, std::nullopt, true, false};
    if (is_libc && !keep_libc) return {candidate, std::nullopt, true, false};
    if (auto dir = c.index.find(pathlib::name(candidate), arch, info.identity.osabi)) {
      rpath.push_back(*dir);
      return {candidate, dir, true, true};
    }
    if (is_libc) return {candidate, std::nullopt, true, false};
  }
  std::string name;
  if (candidates.size() == 1) {
    name = pathlib::normalize(candidates[0]);
  } else {
    for (const auto& s : candidates) name += (name.empty() ? "" : ", ") + pathlib::normalize(s);
    name = "any(" + name + ")";
  }
  return {name, std::nullopt, false, true};
}

std::string join_unique(const std::vector<std::string>& entries) {
  std::vector<std::string> seen;
  for (const auto& e : entries)
    if (std::find(seen.begin(), seen.end(), e) == seen.end()) seen.push_back(e);
  return join_runpath(seen);
}

bool has_layers(const RunpathPolicy& p) { return p.driver || !p.compat_dirs.empty(); }

// The script's patchelf runs, one after the other as it makes them: each
// reads the file the run before wrote. A failed run ends the file's edits
// (the script stops there too, with the earlier run's edit in place).
void run_as_script(const std::string& path, size_t ticket, const Context& c, AutoPatchedFile& out) {
  const AutoPatchelfOptions& o = c.o;
  if (o.edit.dry_run) return;
  auto run = [&](std::string option, std::string value) -> std::optional<PatchelfRunOutput> {
    std::vector<std::string> words{std::move(option), std::move(value), path};
    words.insert(words.end(), o.patchelf_flags.begin(), o.patchelf_flags.end());
    auto ran = o.run_patchelf(words);
    if (!ran) {
      out.error = ran.error();
      return std::nullopt;
    }
    return std::move(*ran);
  };
  if (out.set_interpreter && !(out.interpreter_run = run("--set-interpreter", *o.interpreter))) return;
  if (out.runpath && !(out.runpath_run = run("--set-rpath", *out.runpath))) return;
  // runpatch's own --ldcache / --remove-ldcache: one more edit, after the script's.
  if (follows_other_changes(o.extra.resolution_cache)) return;
  EditRequest cache;
  cache.resolution_cache = o.extra.resolution_cache;
  EditOptions options = o.edit;
  options.group = c.group;
  options.group_ticket = ticket;
  auto edited = edit_elf_file(path, cache, options);
  if (!edited) out.error = edited.error();
}

// ticket: the file's index in the run, which names it among the group's failures.
void patch_file(const std::string& path, size_t ticket, const Context& c, AutoPatchedFile& out) {
  const AutoPatchelfOptions& o = c.o;
  out.path = path;
  auto info = read_elf_info(path);
  if (!info) {
    out.unreadable = info.error();
    return;
  }
  if (auto reason = skip_reason(*info, path, c)) {
    out.skip_reason = *reason;
    return;
  }
  // FreeBSD and OpenBSD keep ld.so apart from libc: the script always keeps libc there.
  bool keep_libc =
      o.keep_libc || info->identity.osabi == elf::ELFOSABI_FREEBSD || info->identity.osabi == elf::ELFOSABI_OPENBSD;
  std::vector<std::string> rpath;
  if (info->interpreter) {
    out.set_interpreter = o.interpreter.has_value();
    for (const auto& d : o.runtime_dependencies) rpath.push_back(pathlib::normalize(d));
  }
  // The script crashes on a malformed .note.dlopen; we go on, and say so.
  for (const auto& problem : info->dlopen_note_problems) out.warnings.push_back("warning: " + problem);
  std::vector<std::vector<std::string>> deps;
  for (const auto& n : info->needed) deps.push_back({n});
  for (const auto& d : info->dlopen)
    if (!d.sonames.empty()) deps.push_back(d.sonames);
  std::string own_dir = pathlib::parent(path);
  for (const auto& candidates : deps) {
    size_t before = rpath.size();
    out.dependencies.push_back(resolve(candidates, *info, keep_libc, c, rpath));
    if (o.origin && rpath.size() > before && rpath.back() == own_dir) rpath.back() = "$ORIGIN";
  }
  for (const auto& a : o.append_rpaths) rpath.push_back(pathlib::normalize(a));

  std::string runpath;
  if (has_layers(o.layers)) {
    RunpathPolicy policy = o.layers;
    // The script sets no runpath when it resolved nothing: the file keeps its
    // own, which the driver and compat hooks then extend (the chain's result).
    policy.keep_existing = rpath.empty();
    policy.resolved_dirs = rpath;
    runpath = apply_policy(policy, effective_runpath(*info), compat_entries_by_content(policy, *info));
  } else {
    runpath = join_unique(rpath);
  }
  if (!runpath.empty()) out.runpath = runpath;
  if (!out.runpath && !out.set_interpreter) return;  // the script runs no patchelf, so no extra args either
  // A separate debug object (objcopy --only-keep-debug) keeps PT_DYNAMIC but
  // not its contents: patchelf leaves it as it is and succeeds, so the script goes on.
  if (info->debug_only) return;

  if (o.run_patchelf && !o.patchelf_flags.empty()) {
    run_as_script(path, ticket, c, out);
    return;
  }
  // Without flags the script's runs amount to one request: one write.
  EditRequest request = o.extra;
  request.force_rpath = request.force_rpath || o.layers.force_rpath;
  if (out.runpath) request.runpath = set_runpath_update(*out.runpath);
  if (out.set_interpreter) request.interpreter = *o.interpreter;
  EditOptions options = o.edit;
  options.group = c.group;
  options.group_ticket = ticket;
  auto edited = edit_elf_file(path, request, options);
  if (!edited) {
    out.error = edited.error();
    return;
  }
  for (const auto& warning : edited->warnings) out.warnings.push_back(warning.text);
}

}  // namespace

AutoPatchelfResult auto_patchelf(const AutoPatchelfOptions& o) {
  AutoPatchelfResult result;
  std::vector<std::string> paths, libs;
  for (const auto& p : o.paths) paths.push_back(pathlib::normalize(p.string()));
  for (const auto& p : o.libs) libs.push_back(pathlib::normalize(p.string()));
  if (paths.empty()) return result;

  // Outputs first, so that find() prefers them; then --libs; then --search-path.
  pathlib::GlobCache globs(o.threads);
  AutoPatchelfIndex index(o.threads, globs, result.index_messages);
  if (!o.ignore_existing) index.populate(paths, o.recurse);
  index.populate(libs, false);
  for (const auto& [recursive, dir] : o.search_paths) index.populate({dir}, recursive);

  Context context{o, index, std::nullopt};
  if (o.interpreter)
    if (auto interp = read_elf_info(*o.interpreter))
      context.target = Target{pyelftools::machine_arch(interp->identity.machine), interp->identity.osabi};

  // Every regular file (not a symlink) under each path, in the script's order;
  // a file listed twice is edited once and reported twice.
  std::vector<pathlib::GlobMatch> entries;
  for (const auto& p : paths)
    for (auto& f : globs.glob(p, "*", o.recurse)) entries.push_back(std::move(f));
  std::vector<char> is_elf(entries.size());  // an open and a read per file (68,849 in a PyTorch venv): on all cores
  parallel_for(entries.size(), o.threads, [&](size_t i) {
    is_elf[i] = pathlib::is_regular_not_symlink(entries[i]) && has_elf_magic(entries[i].path);
  });
  std::vector<std::string> order;
  for (size_t i = 0; i < entries.size(); ++i)
    if (is_elf[i]) order.push_back(std::move(entries[i].path));
  std::map<std::string, size_t> first;
  std::vector<std::string> unique;
  for (const auto& f : order)
    if (first.emplace(f, unique.size()).second) unique.push_back(f);

  std::vector<AutoPatchedFile> patched(unique.size());
  CommitGroup group(o.edit.durability);
  if (!o.edit.dry_run) context.group = &group;
  parallel_for(unique.size(), o.threads, [&](size_t i) { patch_file(unique[i], i, context, patched[i]); });
  for (auto& failure : group.commit()) patched.at(failure.ticket).error = std::move(failure.error);
  for (const auto& f : order) result.files.push_back(patched[first[f]]);

  for (const auto& f : result.files)
    for (const auto& d : f.dependencies) {
      if (d.satisfied) continue;
      // A dlopen entry's "any(a, b)" has no file name: globs see the whole text.
      std::string match = d.name.starts_with("any(") ? d.name : pathlib::name(d.name);
      bool ignored = std::any_of(o.ignore_missing.begin(), o.ignore_missing.end(),
                                 [&](const std::string& g) { return pathlib::fnmatch(g, match); });
      result.missing.push_back({d.name, f.path, ignored});
    }
  return result;
}

}  // namespace runpatch
