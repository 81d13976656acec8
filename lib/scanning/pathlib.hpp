// Paths as Python's pathlib spells and globs them: auto-patchelf.py prints
// PosixPath values and walks trees with Path.glob/rglob, and its messages,
// runpaths and indexing order follow from that.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace runpatch::pathlib {

// PurePosixPath(text).as_posix(): "a//b/./c/" -> "a/b/c", "" -> ".", "//x" keeps both slashes.
std::string normalize(const std::string& text);
std::string join(const std::string& dir, const std::string& name);  // Path(dir) / name
std::string name(const std::string& path);                          // Path.name
std::string parent(const std::string& path);                        // Path.parent
bool is_absolute(const std::string& path);

// fnmatch.fnmatch on POSIX: case-sensitive, '*' matches '/', no backslash escapes.
bool fnmatch(const std::string& pattern, const std::string& name);

// glob(path, pattern, recursive) of auto-patchelf.py: a directory's entries
// whose names match (rglob: the directory, then each subdirectory depth-first,
// never through a symlinked directory; each directory's entries in byte order
// where Python takes the file system's order), or the path itself when it is
// not a directory and its name matches.
struct GlobMatch {
  std::string path;
  // What the directory entry says (d_type), sparing a stat per file; Unknown
  // where it does not say, and for the path itself: then ask the file system.
  enum class Kind { Regular, Symlink, Other, Unknown } kind;
};
std::vector<GlobMatch> glob(const std::string& path, const std::string& pattern, bool recursive);

// The same globs, over listings read once per (path, recursive) and shared by
// every glob of a run: auto-patchelf globs each output for its index
// ("*.so*") and again for the files to patch ("*"). A tree is read a level of
// directories at a time, each level in parallel (68,849 entries in a PyTorch
// venv); the matches come in glob()'s order.
class GlobCache {
 public:
  explicit GlobCache(unsigned threads);
  ~GlobCache();
  std::vector<GlobMatch> glob(const std::string& path, const std::string& pattern, bool recursive);

 private:
  struct Tree;
  const Tree& tree(const std::string& path, bool recursive);
  unsigned threads_;
  std::map<std::pair<std::string, bool>, std::unique_ptr<Tree>> trees_;
};

bool is_file(const std::string& path);     // Path.is_file(): a regular file, through symlinks
bool is_symlink(const std::string& path);  // Path.is_symlink()
// The same for a match, from its entry's type where that answers.
bool is_file(const GlobMatch& match);
// is_file() and not is_symlink(): the files the script edits.
bool is_regular_not_symlink(const GlobMatch& match);

}  // namespace runpatch::pathlib
