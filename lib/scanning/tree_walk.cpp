// Parallel tree walk. Directories are read with readdir (d_type and d_ino spare
// a stat per entry), files are opened relative to their directory's fd, and
// both cores share one queue of directories. Roots are followed when they are
// symlinks. Inside a tree, links are skipped as `find -type f` skips them
// (TreeSymlinks::NotFollowed), or followed with symlinked directories walked
// after the real tree, so real paths win (Followed); every inode is reported once.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "reading/file_checks.hpp"
#include "runpatch/reading/mapped_file.hpp"
#include "runpatch/scanning/scan.hpp"

namespace runpatch {

namespace fs = std::filesystem;

namespace {

using InodeKey = std::pair<dev_t, ino_t>;

struct FileHit {
  std::string path;
  InodeKey key;
  bool via_symlink;
};

struct DirJob {
  std::string path;
  bool via_symlink;
  bool root = false;
};

class Walker {
 public:
  explicit Walker(TreeSymlinks symlinks) : follow_(symlinks == TreeSymlinks::Followed) {}

  TreeListing run(const std::vector<fs::path>& roots) {
    std::vector<DirJob> root_dirs;
    for (const auto& root : roots) add_root(root, root_dirs);
    walk_all(std::move(root_dirs));
    // Symlinked directories, in sorted order, after every real directory is claimed.
    while (!symlinked_dirs_.empty()) {
      std::sort(symlinked_dirs_.begin(), symlinked_dirs_.end());
      auto pending = std::move(symlinked_dirs_);
      symlinked_dirs_.clear();
      std::vector<DirJob> jobs;
      for (auto& [path, key] : pending)
        if (seen_dirs_.insert(key).second) jobs.push_back({path, true});
      walk_all(std::move(jobs));
    }
    return finish();
  }

 private:
  void add_root(const fs::path& root, std::vector<DirJob>& dirs) {
    struct stat st {};
    if (::stat(root.c_str(), &st) != 0) {
      listing_.problems.push_back(system_error(root.string(), "cannot scan"));
      return;
    }
    if (S_ISDIR(st.st_mode)) {
      if (seen_dirs_.insert({st.st_dev, st.st_ino}).second) dirs.push_back({root.string(), false, true});
    } else if (S_ISREG(st.st_mode)) {
      // A file named explicitly is meant to be ELF: saying nothing would pass a typo.
      int magic = elf_magic_at(AT_FDCWD, root.c_str());
      if (magic == 1)
        hits_.push_back({root.string(), {st.st_dev, st.st_ino}, false});
      else if (magic < 0)
        listing_.problems.push_back(system_error(root.string(), "cannot open", -magic));
      else
        listing_.problems.push_back(make_error(ErrorCode::NotElf, root.string(), "not an ELF file (bad magic)"));
    } else {
      listing_.problems.push_back(
          make_error(ErrorCode::NotRegularFile, root.string(), "not a regular file or directory"));
    }
  }

  void walk_all(std::vector<DirJob> jobs) {
    queue_ = std::move(jobs);
    active_ = 0;
    unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::jthread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back([this] { work(); });
    work();
  }

  void work() {
    std::vector<FileHit> hits;
    std::vector<std::pair<std::string, InodeKey>> symlinked;
    std::vector<Error> problems;
    size_t non_elf = 0;
    size_t symlinks_skipped = 0;
    for (;;) {
      DirJob job;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return !queue_.empty() || active_ == 0; });
        if (queue_.empty()) break;
        job = std::move(queue_.back());
        queue_.pop_back();
        ++active_;
      }
      std::vector<DirJob> subdirs;
      read_directory(job, subdirs, hits, symlinked, problems, non_elf, symlinks_skipped);
      {
        std::lock_guard lock(mutex_);
        --active_;
        for (auto& d : subdirs) queue_.push_back(std::move(d));
      }
      cv_.notify_all();
    }
    std::lock_guard lock(mutex_);
    for (auto& h : hits) hits_.push_back(std::move(h));
    for (auto& s : symlinked) symlinked_dirs_.push_back(std::move(s));
    for (auto& p : problems) listing_.problems.push_back(std::move(p));
    listing_.non_elf_files += non_elf;
    listing_.symlinks_skipped += symlinks_skipped;
  }

  void read_directory(const DirJob& job, std::vector<DirJob>& subdirs, std::vector<FileHit>& hits,
                      std::vector<std::pair<std::string, InodeKey>>& symlinked, std::vector<Error>& problems,
                      size_t& non_elf, size_t& symlinks_skipped) {
    // A directory replaced by a link since it was listed is not entered either.
    int nofollow = !follow_ && !job.root ? O_NOFOLLOW : 0;
    int dirfd = ::open(job.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | nofollow);
    if (dirfd < 0) {
      problems.push_back(system_error(job.path, "cannot read directory"));
      return;
    }
    struct stat dir_st {};
    ::fstat(dirfd, &dir_st);
    DIR* dir = ::fdopendir(dirfd);
    if (!dir) {
      ::close(dirfd);
      return;
    }
    std::string prefix = job.path;
    if (prefix.empty() || prefix.back() != '/') prefix += '/';
    while (struct dirent* entry = ::readdir(dir)) {
      const char* name = entry->d_name;
      if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
      unsigned char type = entry->d_type;
      InodeKey key{dir_st.st_dev, entry->d_ino};
      bool via_symlink = job.via_symlink;
      if (type == DT_LNK && !follow_) {
        ++symlinks_skipped;
        continue;
      }
      if (type == DT_LNK || type == DT_UNKNOWN) {
        struct stat st {};
        if (::fstatat(dirfd, name, &st, follow_ ? 0 : AT_SYMLINK_NOFOLLOW) != 0) continue;  // dangling link
        if (S_ISLNK(st.st_mode)) {                                                          // DT_UNKNOWN, not followed
          ++symlinks_skipped;
          continue;
        }
        if (type == DT_LNK) via_symlink = true;
        key = {st.st_dev, st.st_ino};
        type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
        if (type == DT_DIR && via_symlink && !job.via_symlink) {
          symlinked.emplace_back(prefix + name, key);
          continue;
        }
      }
      if (type == DT_DIR) {
        // Real directories cannot form cycles; only symlinked ones are deduplicated by inode.
        if (job.via_symlink) {
          struct stat st {};
          if (::fstatat(dirfd, name, &st, 0) != 0) continue;
          std::lock_guard lock(mutex_);
          if (!seen_dirs_.insert({st.st_dev, st.st_ino}).second) continue;
        } else {
          std::lock_guard lock(mutex_);
          seen_dirs_.insert(key);
        }
        subdirs.push_back({prefix + name, via_symlink});
      } else if (type == DT_REG) {
        int magic = elf_magic_at(dirfd, name);
        if (magic == 1)
          hits.push_back({prefix + name, key, via_symlink});
        else if (magic == -EACCES || magic == -EPERM)  // may be ELF: it cannot be checked, and says so
          problems.push_back(system_error(prefix + name, "cannot open", -magic));
        else
          ++non_elf;
      }
    }
    ::closedir(dir);
  }

  TreeListing finish() {
    // One path per inode: prefer a path not reached through a symlink, then the smallest.
    std::map<InodeKey, const FileHit*> best;
    for (const auto& hit : hits_) {
      auto [it, inserted] = best.emplace(hit.key, &hit);
      if (!inserted && std::tie(hit.via_symlink, hit.path) < std::tie(it->second->via_symlink, it->second->path))
        it->second = &hit;
    }
    for (const auto& [key, hit] : best) listing_.elf_files.emplace_back(hit->path);
    std::sort(listing_.elf_files.begin(), listing_.elf_files.end());
    return std::move(listing_);
  }

  const bool follow_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<DirJob> queue_;
  int active_ = 0;
  std::set<InodeKey> seen_dirs_;
  std::vector<FileHit> hits_;
  std::vector<std::pair<std::string, InodeKey>> symlinked_dirs_;
  TreeListing listing_;
};

}  // namespace

TreeListing list_elf_files(const std::vector<fs::path>& roots, TreeSymlinks symlinks) {
  return Walker(symlinks).run(roots);
}

}  // namespace runpatch
