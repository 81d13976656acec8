// Reads parts of a file with pread, on demand, for parsing headers.
//
// Mapping a file costs an mmap, a page fault per region touched (each one
// mapping up to 16 pages around it) and an munmap that tears them down again:
// 17-40 us per library here, where three or four preads of the header, the
// dynamic section, the section headers and a string cost 6 us. Resolving a
// tree reads hundreds of libraries this way; the editor still maps.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runpatch/reading/expected.hpp"

namespace runpatch {

class FileReader {
 public:
  static Expected<FileReader> open(const std::filesystem::path& path);
  // Reads from an already open descriptor, which the reader then owns.
  static Expected<FileReader> adopt(int fd, std::string path);
  // Reads an image that exists only in memory (the editor's planned result):
  // source fills [offset, offset + length) and says whether it could.
  using Source = std::function<bool(uint64_t offset, uint64_t length, uint8_t* out)>;
  // Optionally, the bytes of a range where the image already holds them in
  // memory (null where it does not): answered without a copy.
  using Direct = std::function<const uint8_t*(uint64_t offset, uint64_t length)>;
  static FileReader from_source(Source source, uint64_t size, std::string path, Direct direct = {});

  FileReader(FileReader&& other) noexcept;
  FileReader& operator=(FileReader&& other) noexcept;
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;
  ~FileReader();

  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // The bytes [offset, offset + length), which the caller has checked lie in
  // the file; read on first use and valid as long as the reader. Null when the
  // read fails or comes up short (the file shrank or the disk failed).
  const uint8_t* at(uint64_t offset, uint64_t length) const;

 private:
  FileReader(int fd, std::string path, uint64_t size) : fd_(fd), path_(std::move(path)), size_(size) {}

  struct Window {
    uint64_t length = 0;
    std::unique_ptr<uint8_t[]> bytes;
  };
  bool read_into(uint8_t* out, uint64_t offset, uint64_t length) const;

  int fd_ = -1;
  Source source_;  // instead of fd_, when set
  Direct direct_;
  std::string path_;
  uint64_t size_ = 0;
  // By offset: a scan reads a handful, but verifying an edit reads every
  // symbol's name (thousands of windows in a big library's string table).
  // A window is never replaced (pointers into it stay valid): a longer one
  // from the same offset goes after it.
  mutable std::multimap<uint64_t, Window> windows_;
};

}  // namespace runpatch
