#include "runpatch/editing/runpath_ops.hpp"

#include <algorithm>
#include <filesystem>

namespace runpatch {

RunpathUpdate set_runpath_update(std::string value) {
  return [value = std::move(value)](const ElfInfo&) -> Expected<RunpathChange> { return RunpathChange::set(value); };
}

RunpathUpdate remove_runpath_update() {
  return [](const ElfInfo&) -> Expected<RunpathChange> { return RunpathChange::remove(); };
}

RunpathUpdate add_runpath_update(std::string entries, bool prepend, bool deduplicate) {
  return [entries = std::move(entries), prepend, deduplicate](const ElfInfo& info) -> Expected<RunpathChange> {
    std::string old = effective_runpath(info);
    std::string joined = old.empty() ? entries : prepend ? entries + ":" + old : old + ":" + entries;
    if (!deduplicate) return RunpathChange::set(joined);
    std::vector<std::string> unique;
    for (auto& entry : split_runpath(joined))
      if (std::find(unique.begin(), unique.end(), entry) == unique.end()) unique.push_back(std::move(entry));
    return RunpathChange::set(join_runpath(unique));
  };
}

RunpathUpdate shrink_runpath_update(std::vector<std::string> allowed_prefixes) {
  return [prefixes = std::move(allowed_prefixes)](const ElfInfo& info) -> Expected<RunpathChange> {
    if (!info.runpath && !info.rpath) return RunpathChange::keep();
    std::vector<bool> found(info.needed.size(), false);
    std::vector<std::string> kept;
    for (const auto& dir : split_runpath(effective_runpath(info))) {
      if (dir.empty() || dir[0] != '/') {  // $ORIGIN-relative: cannot be checked here, kept as patchelf does
        kept.push_back(dir);
        continue;
      }
      if (!prefixes.empty() && std::none_of(prefixes.begin(), prefixes.end(),
                                            [&](const std::string& p) { return dir.compare(0, p.size(), p) == 0; }))
        continue;
      bool useful = false;
      for (size_t i = 0; i < info.needed.size(); ++i) {
        if (found[i]) continue;
        auto candidate = read_elf_info(std::filesystem::path(dir) / info.needed[i]);
        if (candidate && candidate->identity.elf_class == info.identity.elf_class &&
            candidate->identity.machine == info.identity.machine)
          found[i] = useful = true;
      }
      if (useful) kept.push_back(dir);
    }
    return RunpathChange::set(join_runpath(kept));
  };
}

}  // namespace runpatch
