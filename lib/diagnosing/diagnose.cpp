#include "runpatch/diagnosing/diagnose.hpp"

#include <fmt/format.h>

#include "runpatch/cuda/cuda.hpp"
#include "runpatch/reading/loader_paths.hpp"
#include "runpatch/scanning/scan.hpp"

namespace runpatch {

std::vector<Suggestion> suggest_fixes(const DependencyTree& tree, const DependencyEdge& edge,
                                      const std::vector<std::filesystem::path>& search_dirs) {
  std::vector<Suggestion> out;
  const auto& requester = tree.objects[edge.from];
  const auto& want = tree.objects[0].info->identity;
  // Looking for a library is reading: links into other trees are followed.
  TreeListing listing = list_elf_files(search_dirs, TreeSymlinks::Followed);
  for (const auto& file : listing.elf_files) {
    if (file.filename() != edge.resolution.name) continue;
    auto info = read_elf_info(file);
    if (!info) continue;
    Suggestion s{file.string(), "usable", ""};
    // A runpath entry must be absolute (check flags a relative one): suggest the absolute directory.
    std::error_code ec;
    std::filesystem::path absolute = std::filesystem::absolute(file, ec);
    std::string dir = (ec ? file : absolute.lexically_normal()).parent_path().string();
    if (info->identity.elf_class != want.elf_class || info->identity.machine != want.machine ||
        info->identity.byte_order != want.byte_order) {
      s.verdict = fmt::format("wrong class or machine: ELF{} {}", info->identity.elf_class == ElfClass::Elf64 ? 64 : 32,
                              machine_name(info->identity.machine));
      s.advice = fmt::format("{} is built for another machine; it cannot satisfy {}", file.string(), requester.path);
    } else if (is_stub_library(file.string())) {
      s.verdict = "stub";
      s.advice =
          fmt::format("{} is a link-time stub: never put {} in a runpath (the real library comes from the driver)",
                      file.string(), dir);
    } else {
      s.advice = fmt::format("add {} to the runpath of {}: runpatch set --add-runpath {} {}", dir, requester.path, dir,
                             requester.path);
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace runpatch
