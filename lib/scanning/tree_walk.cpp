#include <sys/stat.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <system_error>

#include "runpatch/mapped_file.hpp"
#include "runpatch/scan.hpp"

namespace runpatch {

namespace fs = std::filesystem;

namespace {

using InodeKey = std::pair<dev_t, ino_t>;

struct Candidate {
  fs::path path;
  bool via_symlink;
};

class Walker {
 public:
  TreeListing run(const std::vector<fs::path>& roots) {
    for (const auto& root : roots) visit(root, /*via_symlink=*/false, /*is_root=*/true);
    // Directories reached through symlinks are walked last, so that a tree's
    // real paths claim its directories first.
    while (!deferred_dirs_.empty()) {
      auto [path, key] = deferred_dirs_.front();
      deferred_dirs_.pop_front();
      if (seen_dirs_.insert(key).second) walk_directory(path, true);
    }
    return finish();
  }

 private:
  void visit(const fs::path& path, bool via_symlink, bool is_root) {
    struct stat link_st {}, st {};
    if (::lstat(path.c_str(), &link_st) != 0) {
      if (is_root) listing_.problems.push_back(make_error(path.string(), "no such file or directory"));
      return;
    }
    bool is_link = S_ISLNK(link_st.st_mode);
    if (::stat(path.c_str(), &st) != 0) return;  // dangling symlink: nothing to scan
    via_symlink = via_symlink || is_link;
    InodeKey key{st.st_dev, st.st_ino};
    if (S_ISDIR(st.st_mode)) {
      if (via_symlink && !is_root) {
        deferred_dirs_.emplace_back(path, key);  // claimed later, if no real path claims it first
      } else if (seen_dirs_.insert(key).second) {
        walk_directory(path, via_symlink);
      }
    } else if (S_ISREG(st.st_mode)) {
      files_[key].push_back({path, via_symlink});
    }
  }

  void walk_directory(const fs::path& dir, bool via_symlink) {
    std::error_code ec;
    std::vector<fs::path> children;
    for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end; it.increment(ec))
      children.push_back(it->path());
    if (ec) listing_.problems.push_back(make_error(dir.string(), "cannot read directory: " + ec.message()));
    std::sort(children.begin(), children.end());
    for (const auto& child : children) visit(child, via_symlink, false);
  }

  TreeListing finish() {
    // One path per inode: prefer a path not reached through a symlink, then the smallest.
    std::vector<fs::path> chosen;
    for (auto& [key, candidates] : files_) {
      auto best = std::min_element(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
        return std::tie(a.via_symlink, a.path) < std::tie(b.via_symlink, b.path);
      });
      chosen.push_back(best->path);
    }
    std::sort(chosen.begin(), chosen.end());
    for (auto& path : chosen) {
      if (has_elf_magic(path)) listing_.elf_files.push_back(std::move(path));
      else ++listing_.non_elf_files;
    }
    return std::move(listing_);
  }

  TreeListing listing_;
  std::set<InodeKey> seen_dirs_;
  std::map<InodeKey, std::vector<Candidate>> files_;
  std::deque<std::pair<fs::path, InodeKey>> deferred_dirs_;
};

}  // namespace

TreeListing list_elf_files(const std::vector<fs::path>& roots) { return Walker().run(roots); }

}  // namespace runpatch
