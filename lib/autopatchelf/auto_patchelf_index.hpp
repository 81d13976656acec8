// auto-patchelf.py's library index: (file name, architecture) -> the
// directories holding such a library, in the order they were indexed.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "scanning/pathlib.hpp"

namespace runpatch {

class AutoPatchelfIndex {
 public:
  // Globs go through globs, which the caller's later globs of the same trees share.
  AutoPatchelfIndex(unsigned threads, pathlib::GlobCache& globs, std::vector<std::string>& messages)
      : threads_(threads), globs_(globs), messages_(messages) {}

  // The script's populate_cache: each directory (or file) once per run, its
  // "*.so*" entries (recursively if asked), then the directories named by their
  // runpaths ($ORIGIN entries left out), breadth first, with the same recursion.
  void populate(const std::vector<std::string>& initial, bool recursive);

  // The first indexed directory holding `name` for this architecture whose OS ABI goes with `osabi`.
  std::optional<std::string> find(const std::string& name, const std::string& arch, uint8_t osabi) const;

 private:
  struct Entry {
    std::string dir;
    uint8_t osabi;
  };
  unsigned threads_;
  pathlib::GlobCache& globs_;
  std::vector<std::string>& messages_;
  std::set<std::string> visited_;
  std::unordered_map<std::string, std::vector<Entry>> entries_;  // key: name + '\0' + arch
};

}  // namespace runpatch
