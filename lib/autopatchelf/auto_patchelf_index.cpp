#include "auto_patchelf_index.hpp"

#include <climits>
#include <cstdlib>

#include "scanning/pathlib.hpp"
#include "pyelftools_names.hpp"
#include "runpatch/reading/loader_paths.hpp"
#include "runpatch/reading/elf_info.hpp"
#include "runpatch/scanning/scan.hpp"

namespace runpatch {

namespace {

// Path.resolve() of an existing file, kept only when it has the same name
// (a libfoo.so -> libfoo.so.1 link records the link's directory).
std::string recorded_dir(const std::string& path) {
  char buffer[PATH_MAX];
  if (::realpath(path.c_str(), buffer)) {
    std::string resolved = buffer;
    if (pathlib::name(resolved) == pathlib::name(path)) return pathlib::parent(resolved);
  }
  return pathlib::parent(path);
}

std::vector<std::string> runpath_dirs(const ElfInfo& info) {
  std::vector<std::string> dirs;
  const std::optional<std::string>& list = info.runpath ? info.runpath : info.rpath;
  if (!list) return dirs;
  // The script's test: the text "$ORIGIN" anywhere (a braced ${ORIGIN} is kept as a directory).
  for (const auto& entry : split_runpath(*list))
    if (!entry.empty() && entry.find("$ORIGIN") == std::string::npos) dirs.push_back(pathlib::normalize(entry));
  return dirs;
}

}  // namespace

// What the index needs of one "*.so*" entry, read on any thread.
struct Candidate {
  pathlib::GlobMatch match;
  std::optional<ElfInfo> info;  // none: not a regular ELF file the reader accepts (the script passes over it)
  std::string dir;              // where the index records it
};

void AutoPatchelfIndex::populate(const std::vector<std::string>& initial, bool recursive) {
  std::vector<std::string> round;
  for (const auto& p : initial) round.push_back(pathlib::normalize(p));
  // The script's queue, a round at a time: the directories a round's
  // libraries name come after every directory already queued, as in the
  // script, so all files of a round can be read at once, in parallel.
  while (!round.empty()) {
    std::vector<Candidate> candidates;
    for (const auto& dir : round) {
      if (!visited_.insert(dir).second) continue;
      for (auto& f : globs_.glob(dir, "*.so*", recursive)) candidates.push_back({std::move(f), {}, {}});
    }
    parallel_for(candidates.size(), threads_, [&](size_t i) {
      Candidate& c = candidates[i];
      // Path.is_file() follows a symlink (libfoo.so -> libfoo.so.1 is indexed).
      if (!pathlib::is_file(c.match)) return;
      if (auto info = read_elf_info(c.match.path)) c.info = std::move(*info);
      if (c.info && !c.info->debug_only) c.dir = recorded_dir(c.match.path);
    });
    std::vector<std::string> next;
    for (const auto& c : candidates) {
      if (!c.info) continue;
      if (c.info->debug_only) {
        messages_.push_back("skipping " + c.match.path + " because it looks like a separate debug object");
        continue;
      }
      for (auto& d : runpath_dirs(*c.info)) next.push_back(std::move(d));
      std::string key = pathlib::name(c.match.path) + '\0' + pyelftools::machine_arch(c.info->identity.machine);
      entries_[key].push_back({c.dir, c.info->identity.osabi});
    }
    round = std::move(next);
  }
}

std::optional<std::string> AutoPatchelfIndex::find(const std::string& name, const std::string& arch,
                                                   uint8_t osabi) const {
  auto it = entries_.find(name + '\0' + arch);
  if (it == entries_.end()) return std::nullopt;
  for (const auto& e : it->second)
    if (pyelftools::osabi_compatible(osabi, e.osabi)) return e.dir;
  return std::nullopt;
}

}  // namespace runpatch
