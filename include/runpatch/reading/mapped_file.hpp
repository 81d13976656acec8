// A read-only memory mapping of a whole file. Pages are faulted in only when
// touched, so parsing headers of a 300 MB library reads a handful of pages.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "runpatch/reading/expected.hpp"

namespace runpatch {

class MappedFile {
 public:
  static Expected<MappedFile> open(const std::filesystem::path& path);
  // Maps an already open descriptor (which stays open and owned by the caller);
  // path names the file in messages.
  static Expected<MappedFile> map(int fd, std::string path);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, const uint8_t* data, uint64_t size) : path_(std::move(path)), data_(data), size_(size) {}
  void release();

  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

// Cheap pre-check without mapping: does the file start with the ELF magic?
bool has_elf_magic(const std::filesystem::path& path);
// The same for name relative to the directory descriptor dirfd (or AT_FDCWD).
bool has_elf_magic_at(int dirfd, const char* name);
// The same, telling a file that cannot be opened (errno, e.g. EACCES) from
// one that is not ELF: 1 ELF, 0 not ELF, -errno when the open failed.
int elf_magic_at(int dirfd, const char* name);

}  // namespace runpatch
