#include "runpatch/reading/mapped_file.hpp"

#include "reading/file_checks.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

namespace runpatch {

namespace {
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};
}  // namespace

Expected<MappedFile> MappedFile::open(const std::filesystem::path& path) {
  std::string name = path.string();
  FdCloser fd{::open(name.c_str(), O_RDONLY | O_CLOEXEC | kOpenWithoutWaiting)};
  if (fd.fd < 0) return system_error(name, "cannot open");
  return map(fd.fd, std::move(name));  // the mapping outlives the descriptor
}

Expected<MappedFile> MappedFile::map(int fd, std::string path) {
  RUNPATCH_TRY(uint64_t size, regular_file_size(fd, path));
  // Shared, so that it shows the file as it is, also after an editor's writes.
  void* data = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) return system_error(path, "cannot map");
  return MappedFile(std::move(path), static_cast<const uint8_t*>(data), size);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)), data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() { release(); }

void MappedFile::release() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
}

int elf_magic_at(int dirfd, const char* name) {
  // O_NONBLOCK: a FIFO that slipped through must not hang the caller.
  FdCloser fd{::openat(dirfd, name, O_RDONLY | O_CLOEXEC | kOpenWithoutWaiting)};
  if (fd.fd < 0) return -errno;
  unsigned char magic[4];
  return ::pread(fd.fd, magic, sizeof magic, 0) == 4 && std::memcmp(magic, "\177ELF", 4) == 0 ? 1 : 0;
}

bool has_elf_magic_at(int dirfd, const char* name) { return elf_magic_at(dirfd, name) == 1; }

bool has_elf_magic(const std::filesystem::path& path) { return has_elf_magic_at(AT_FDCWD, path.c_str()); }

}  // namespace runpatch
