#include "loader_listing.hpp"

#include <sstream>

#include "process.hpp"
#include "tools_under_test.hpp"

namespace runpatch::test {

LoaderListing parse_loader_listing(const std::string& output, const std::string& loader) {
  LoaderListing view;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    auto start = line.find_first_not_of(" \t");
    if (start == std::string::npos) continue;
    // A loader stops at the first library it cannot find (glibc's message, then musl's).
    bool stopped = false;
    for (std::string_view marker : {"error while loading shared libraries: ", "Error loading shared library "}) {
      auto at = line.find(marker);
      if (at == std::string::npos) continue;
      auto name_at = at + marker.size();
      view.missing.insert(line.substr(name_at, line.find(':', name_at) - name_at));
      stopped = true;
    }
    if (stopped) continue;
    auto arrow = line.find(" => ");
    if (arrow == std::string::npos) {
      // A DT_NEEDED with a slash is listed by its expanded path alone; skip vdso and the loader.
      auto paren = line.find(" (0x");
      if (line[start] != '/' || paren == std::string::npos) continue;
      std::string path = line.substr(start, paren - start);
      if (path != loader) view.found[path] = path;
      continue;
    }
    std::string name = line.substr(start, arrow - start);
    std::string rest = line.substr(arrow + 4);
    if (rest.rfind("not found", 0) == 0)
      view.missing.insert(name);
    else if (rest.substr(0, rest.find(" (")) != loader)
      view.found[name] = rest.substr(0, rest.find(" ("));
  }
  return view;
}

LoaderListing listing_of(const DependencyTree& tree, const std::string& loader) {
  LoaderListing view;
  for (const auto& e : tree.edges) {
    if (e.dlopen) continue;  // --list shows DT_NEEDED only
    if (!e.resolution.path)
      view.missing.insert(e.resolution.name);
    else if (e.to && *e.to > 0 && e.resolution.via != FoundVia::AlreadyLoaded && tree.objects[*e.to].path != loader) {
      bool has_slash = e.resolution.name.find('/') != std::string::npos;
      view.found.emplace(has_slash ? *e.resolution.path : e.resolution.name, *e.resolution.path);
    }
  }
  return view;
}

std::string listing_differences(const std::string& file, const LoaderListing& mine, const LoaderListing& theirs) {
  if (mine.found == theirs.found && mine.missing == theirs.missing) return "";
  std::string out = file + ":";
  for (const auto& [name, path] : theirs.found) {
    auto it = mine.found.find(name);
    if (it == mine.found.end() || it->second != path)
      out += " " + name + " loader=" + path + " runpatch=" + (it == mine.found.end() ? "" : it->second);
  }
  for (const auto& [name, path] : mine.found)
    if (!theirs.found.count(name)) out += " " + name + " only runpatch=" + path;
  for (const auto& name : theirs.missing)
    if (!mine.missing.count(name)) out += " " + name + " missing for the loader only";
  for (const auto& name : mine.missing)
    if (!theirs.missing.count(name)) out += " " + name + " missing for runpatch only";
  return out + "\n";
}

std::optional<FlavourLoader> loader_for(const ElfFlavour& flavour) {
  std::optional<FlavourLoader> found;
  if (flavour.is64 && !flavour.big) found = FlavourLoader{{}, kHostLoader};
  if (flavour.is64 && flavour.big)
    found = FlavourLoader{{"qemu-ppc64", "-L", "/usr/powerpc64-linux-gnu"}, "/usr/powerpc64-linux-gnu/lib64/ld64.so.1"};
  if (!flavour.is64 && !flavour.big)
    found = FlavourLoader{{"qemu-i386", "-L", "/usr/i686-linux-gnu"}, "/usr/i686-linux-gnu/lib/ld-linux.so.2"};
  if (!flavour.is64 && flavour.big)
    found = FlavourLoader{{"qemu-ppc", "-L", "/usr/powerpc-linux-gnu"}, "/usr/powerpc-linux-gnu/lib/ld.so.1"};
  if (!found || !std::filesystem::exists(found->loader)) return std::nullopt;
  if (!found->emulator.empty() && !have_program(found->emulator[0])) return std::nullopt;
  return found;
}

CommandResult run_loader(const FlavourLoader& loader, const std::vector<std::string>& environment,
                         const std::vector<std::string>& args) {
  // qemu-user takes the guest's environment as -E (set on qemu itself it would reach qemu's own loader).
  std::vector<std::string> argv = loader.emulator.empty() ? std::vector<std::string>{"env"} : loader.emulator;
  for (const auto& setting : environment) {
    if (!loader.emulator.empty()) argv.push_back("-E");
    argv.push_back(setting);
  }
  argv.push_back(loader.loader);
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, true);
}

std::optional<std::vector<std::string>> loader_runpath_search(const FlavourLoader& loader,
                                                              const std::filesystem::path& file) {
  auto traced = run_loader(loader, {"LD_DEBUG=libs"}, {"--list", file.string()});
  const std::string label = "(RUNPATH from file " + file.string() + ")";
  std::istringstream lines(traced.output);
  for (std::string line; std::getline(lines, line);) {
    auto path_at = line.find("search path=");
    if (path_at == std::string::npos || line.find(label) == std::string::npos) continue;
    path_at += std::string("search path=").size();
    std::string paths = line.substr(path_at, line.find('\t', path_at) - path_at);
    std::vector<std::string> dirs;
    std::istringstream entries(paths);
    for (std::string dir; std::getline(entries, dir, ':');) dirs.push_back(dir);
    return dirs;
  }
  return std::nullopt;
}

}  // namespace runpatch::test
