#include "scanning/pathlib.hpp"

#include <dirent.h>
#include <fnmatch.h>
#include <sys/stat.h>

#include <algorithm>
#include <unordered_map>

#include "runpatch/scanning/scan.hpp"

namespace runpatch::pathlib {

std::string normalize(const std::string& text) {
  std::string root;
  if (text.starts_with("//") && !text.starts_with("///"))
    root = "//";
  else if (text.starts_with("/"))
    root = "/";
  std::string out = root;
  size_t i = 0;
  while (i <= text.size()) {
    size_t end = text.find('/', i);
    if (end == std::string::npos) end = text.size();
    std::string part = text.substr(i, end - i);
    if (!part.empty() && part != ".") {
      if (out.size() > root.size()) out += '/';
      out += part;
    }
    i = end + 1;
  }
  return out.empty() ? "." : out;
}

std::string join(const std::string& dir, const std::string& name) {
  if (name.starts_with("/")) return normalize(name);
  if (dir == ".") return normalize(name);
  return normalize(dir + "/" + name);
}

std::string name(const std::string& path) {
  std::string p = normalize(path);
  if (p == "." || p == "/" || p == "//") return "";
  return p.substr(p.rfind('/') + 1);
}

std::string parent(const std::string& path) {
  std::string p = normalize(path);
  auto slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  if (p == "/" || p == "//") return p;
  std::string head = p.substr(0, slash);
  if (head.empty() || head == "/") return p.starts_with("//") ? "//" : "/";
  return head;
}

bool is_absolute(const std::string& path) { return path.starts_with("/"); }

bool fnmatch(const std::string& pattern, const std::string& name) {
  return ::fnmatch(pattern.c_str(), name.c_str(), FNM_NOESCAPE) == 0;
}

// Outside the anonymous namespace: GlobCache::Tree (declared in pathlib.hpp)
// holds them (-Wsubobject-linkage; GCC reports it once this file is compiled
// inside a unity batch, as CI does).
struct DirEntry {
  std::string name;
  unsigned char type;  // d_type: DT_DIR, DT_LNK, ...; DT_UNKNOWN where the file system does not say
  bool operator<(const DirEntry& other) const { return name < other.name; }
};

using Listings = std::unordered_map<std::string, std::vector<DirEntry>>;

namespace {

// The file's type and mode through symlinks (stat) or of a link itself (lstat); 0 when it has none.
mode_t mode_of(const std::string& path, bool through_symlinks) {
  struct stat st {};
  int found = through_symlinks ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st);
  return found == 0 ? st.st_mode : 0;
}

bool stat_is_dir(const std::string& path) { return S_ISDIR(mode_of(path, true)); }
bool lstat_is_real_dir(const std::string& path) { return S_ISDIR(mode_of(path, false)); }

std::vector<DirEntry> entries(const std::string& dir) {
  std::vector<DirEntry> found;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return found;  // pathlib ignores unreadable directories
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") found.push_back({std::move(n), e->d_type});
  }
  ::closedir(d);
  std::sort(found.begin(), found.end());
  return found;
}

GlobMatch::Kind kind_of(unsigned char type) {
  switch (type) {
    case DT_REG: return GlobMatch::Kind::Regular;
    case DT_LNK: return GlobMatch::Kind::Symlink;
    case DT_UNKNOWN: return GlobMatch::Kind::Unknown;
    default: return GlobMatch::Kind::Other;
  }
}

// Only real directories are entered; the entry's type saves an lstat per file (68,849 in a PyTorch venv).
bool entered(const std::string& dir, const DirEntry& e) {
  return e.type == DT_DIR || (e.type == DT_UNKNOWN && lstat_is_real_dir(join(dir, e.name)));
}

void walk(const std::string& dir, const std::string& pattern, bool recursive, const Listings& listed,
          std::vector<GlobMatch>& out) {
  auto it = listed.find(dir);
  if (it == listed.end()) return;
  const std::vector<DirEntry>& found = it->second;
  for (const auto& e : found)
    if (fnmatch(pattern, e.name)) out.push_back({join(dir, e.name), kind_of(e.type)});
  if (!recursive) return;
  // The directories list_tree entered are the ones it listed.
  for (const auto& e : found) {
    if (e.type != DT_DIR && e.type != DT_UNKNOWN) continue;
    std::string child = join(dir, e.name);
    if (listed.count(child)) walk(child, pattern, true, listed, out);
  }
}

// Every directory's entries under root (root alone unless recursive), a level at a time.
Listings list_tree(const std::string& root, bool recursive, unsigned threads) {
  Listings listed;
  std::vector<std::string> level{root};
  while (!level.empty()) {
    std::vector<std::vector<DirEntry>> found(level.size());
    parallel_for(level.size(), threads, [&](size_t i) { found[i] = entries(level[i]); });
    std::vector<std::string> next;
    for (size_t i = 0; i < level.size(); ++i) {
      if (recursive)
        for (const auto& e : found[i])
          if (entered(level[i], e)) next.push_back(join(level[i], e.name));
      listed.emplace(std::move(level[i]), std::move(found[i]));
    }
    level = std::move(next);
  }
  return listed;
}

}  // namespace

bool is_file(const std::string& path) { return S_ISREG(mode_of(path, true)); }
bool is_symlink(const std::string& path) { return S_ISLNK(mode_of(path, false)); }

bool is_file(const GlobMatch& match) {
  return match.kind == GlobMatch::Kind::Regular || (match.kind != GlobMatch::Kind::Other && is_file(match.path));
}

bool is_regular_not_symlink(const GlobMatch& match) {
  return match.kind == GlobMatch::Kind::Regular ||
         (match.kind == GlobMatch::Kind::Unknown && !is_symlink(match.path) && is_file(match.path));
}

struct GlobCache::Tree {
  std::string root;
  bool is_dir = false;
  bool recursive = false;
  Listings listed;

  std::vector<GlobMatch> glob(const std::string& pattern) const {
    std::vector<GlobMatch> out;
    if (is_dir)
      walk(root, pattern, recursive, listed, out);
    else if (fnmatch(pattern, name(root)))
      out.push_back({root, GlobMatch::Kind::Unknown});
    return out;
  }
};

GlobCache::GlobCache(unsigned threads) : threads_(threads) {}
GlobCache::~GlobCache() = default;

const GlobCache::Tree& GlobCache::tree(const std::string& path, bool recursive) {
  std::string root = normalize(path);
  auto& slot = trees_[{root, recursive}];
  if (!slot) {
    slot = std::make_unique<Tree>();
    slot->root = root;
    slot->recursive = recursive;
    slot->is_dir = stat_is_dir(root);
    if (slot->is_dir) slot->listed = list_tree(root, recursive, threads_);
  }
  return *slot;
}

std::vector<GlobMatch> GlobCache::glob(const std::string& path, const std::string& pattern, bool recursive) {
  return tree(path, recursive).glob(pattern);
}

std::vector<GlobMatch> glob(const std::string& path, const std::string& pattern, bool recursive) {
  return GlobCache(1).glob(path, pattern, recursive);
}

}  // namespace runpatch::pathlib
