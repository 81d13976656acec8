#include "auto_patchelf_index.hpp"

#include <sys/stat.h>

#include <climits>
#include <cstdlib>
#include <deque>

#include "pathlib.hpp"
#include "pyelftools_names.hpp"
#include "runpatch/reading/loader_paths.hpp"
#include "runpatch/reading/elf_info.hpp"
#include "runpatch/scanning/scan.hpp"

namespace runpatch {

namespace {

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

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

void AutoPatchelfIndex::populate(const std::vector<std::string>& initial, bool recursive) {
  std::deque<std::string> queue;
  for (const auto& p : initial) queue.push_back(pathlib::normalize(p));
  while (!queue.empty()) {
    std::string dir = queue.front();
    queue.pop_front();
    if (!visited_.insert(dir).second) continue;
    std::vector<std::string> files;
    for (auto& f : pathlib::glob(dir, "*.so*", recursive))
      if (is_file(f)) files.push_back(std::move(f));
    // Reading is the slow part: in parallel, then recorded in the script's order.
    std::vector<std::optional<ElfInfo>> infos(files.size());
    parallel_for(files.size(), threads_, [&](size_t i) {
      if (auto info = read_elf_info(files[i])) infos[i] = std::move(*info);
    });
    for (size_t i = 0; i < files.size(); ++i) {
      if (!infos[i]) continue;  // not ELF, or unreadable: the script passes over it
      const ElfInfo& info = *infos[i];
      if (info.debug_only) {
        messages_.push_back("skipping " + files[i] + " because it looks like a separate debug object");
        continue;
      }
      for (auto& d : runpath_dirs(info)) queue.push_back(std::move(d));
      std::string key = pathlib::name(files[i]) + '\0' + pyelftools::machine_arch(info.identity.machine);
      entries_[key].push_back({recorded_dir(files[i]), info.identity.osabi});
    }
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
