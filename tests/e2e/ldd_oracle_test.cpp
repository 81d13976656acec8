// `runpatch tree` agrees with the real loader (`ld.so --list`, what ldd runs) on
// every dynamically linked host ELF file under /usr/bin, /usr/lib and the CUDA
// toolkit: the same libraries found at the same paths, the same ones missing.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "process.hpp"
#include "runpatch/resolve.hpp"
#include "runpatch/scan.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;

const char* kHostLoader = "/lib64/ld-linux-x86-64.so.2";

struct LoaderView {
  std::map<std::string, std::string> found;  // name -> path
  std::set<std::string> missing;
};

std::optional<LoaderView> ld_so_list(const fs::path& file) {
  auto r = test::run_command({"sh", "-c",
                              std::string("exec env -u LD_LIBRARY_PATH -u LD_PRELOAD ") + kHostLoader + " --list " +
                                  test::shell_quote(file.string()) + " 2>/dev/null"});
  if (r.exit_code != 0) return std::nullopt;
  LoaderView view;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    auto arrow = line.find(" => ");
    if (arrow == std::string::npos) {
      // A DT_NEEDED with a slash is listed by its expanded path alone; skip vdso and the loader.
      auto start = line.find_first_not_of(" \t");
      auto paren = line.find(" (0x");
      if (start == std::string::npos || line[start] != '/' || paren == std::string::npos) continue;
      std::string path = line.substr(start, paren - start);
      if (path != kHostLoader) view.found[path] = path;
      continue;
    }
    std::string name = line.substr(line.find_first_not_of(" \t"), arrow - line.find_first_not_of(" \t"));
    std::string rest = line.substr(arrow + 4);
    if (rest.rfind("not found", 0) == 0) view.missing.insert(name);
    else view.found[name] = rest.substr(0, rest.find(" ("));
  }
  return view;
}

LoaderView ours(const DependencyTree& tree) {
  LoaderView view;
  for (const auto& e : tree.edges) {
    if (e.dlopen) continue;  // ld.so --list shows DT_NEEDED only
    if (!e.resolution.path) view.missing.insert(e.resolution.name);
    else if (e.to && *e.to > 0 && e.resolution.via != FoundVia::AlreadyLoaded &&
             tree.objects[*e.to].path != kHostLoader) {
      bool has_slash = e.resolution.name.find('/') != std::string::npos;
      view.found.emplace(has_slash ? *e.resolution.path : e.resolution.name, *e.resolution.path);
    }
  }
  return view;
}

std::vector<fs::path> host_dynamic_files(const std::vector<fs::path>& roots) {
  std::vector<fs::path> files;
  auto listing = list_elf_files(roots);
  auto infos = read_elf_infos(listing.elf_files);
  for (size_t i = 0; i < infos.size(); ++i) {
    const auto& info = infos[i];
    std::string path = listing.elf_files[i].string();
    if (!info || !info->has_dynamic || info->identity.machine != 62 || info->identity.elf_class != ElfClass::Elf64) continue;
    if (path.find("/debug/") != std::string::npos || info->type == 1) continue;
    files.push_back(listing.elf_files[i]);
  }
  return files;
}

TEST(LddOracle, TreeMatchesTheLoaderOnEveryHostFile) {
  if (!fs::exists(kHostLoader)) GTEST_SKIP() << kHostLoader << " is absent";
  std::vector<fs::path> roots;
  for (const char* dir : {"/usr/bin", "/usr/lib", "/usr/local/cuda-13.0"})
    if (fs::exists(dir)) roots.emplace_back(dir);
  auto files = host_dynamic_files(roots);
  if (files.size() < 100) GTEST_SKIP() << "only " << files.size() << " dynamic ELF files found";
  SearchEnvironment env = SearchEnvironment::host(/*with_ld_library_path=*/false);
  std::mutex mutex;
  std::string mismatches;
  size_t compared = 0, loader_refused = 0;
  parallel_for(files.size(), 0, [&](size_t i) {
    auto theirs = ld_so_list(files[i]);
    auto tree = resolve_tree(files[i], env);
    std::lock_guard lock(mutex);
    if (!theirs) {
      ++loader_refused;  // the loader itself will not load it (e.g. a plugin needing symbols of its host)
      return;
    }
    ++compared;
    if (!tree) {
      mismatches += files[i].string() + ": " + tree.error().message() + "\n";
      return;
    }
    auto mine = ours(*tree);
    if (mine.found != theirs->found || mine.missing != theirs->missing) {
      mismatches += files[i].string() + ":";
      for (const auto& [name, path] : theirs->found)
        if (mine.found[name] != path) mismatches += " " + name + " ld.so=" + path + " runpatch=" + mine.found[name];
      for (const auto& [name, path] : mine.found)
        if (!theirs->found.count(name)) mismatches += " " + name + " only runpatch=" + path;
      for (const auto& name : theirs->missing)
        if (!mine.missing.count(name)) mismatches += " " + name + " missing for ld.so only";
      for (const auto& name : mine.missing)
        if (!theirs->missing.count(name)) mismatches += " " + name + " missing for runpatch only";
      mismatches += "\n";
    }
  });
  std::cout << "[ INFO ] compared " << compared << " files with ld.so --list (" << loader_refused
            << " refused by ld.so itself)\n";
  EXPECT_GE(compared, 100u);
  EXPECT_EQ(mismatches.substr(0, 4000), "");
}

}  // namespace
}  // namespace runpatch
