#include "reading/file_reader.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "reading/file_checks.hpp"

namespace runpatch {

namespace {
// Windows start on a 64-byte boundary, so a table keeps the alignment it has
// in the file, and cover at least 1 KiB: the ELF header, the program headers
// and the first notes usually come in one read, and little is copied twice.
// A reader that has needed many windows is walking a table: larger reads.
constexpr uint64_t kAlign = 64, kMinimum = 1024, kWalkingMinimum = 64 * 1024;
constexpr size_t kWindowsBeforeWalking = 16;
constexpr int kWindowsLookedAt = 4;
}  // namespace

Expected<FileReader> FileReader::open(const std::filesystem::path& path) {
  std::string name = path.string();
  int fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC | kOpenWithoutWaiting);
  if (fd < 0) return system_error(name, "cannot open");
  return adopt(fd, std::move(name));
}

Expected<FileReader> FileReader::adopt(int fd, std::string path) {
  FileReader reader(fd, std::move(path), 0);  // closes fd on every way out
  RUNPATCH_TRY(reader.size_, regular_file_size(fd, reader.path_));
  return reader;
}

FileReader FileReader::from_source(Source source, uint64_t size, std::string path, Direct direct) {
  FileReader reader(-1, std::move(path), size);
  reader.source_ = std::move(source);
  reader.direct_ = std::move(direct);
  return reader;
}

FileReader::FileReader(FileReader&& other) noexcept
    : fd_(other.fd_),
      source_(std::move(other.source_)),
      direct_(std::move(other.direct_)),
      path_(std::move(other.path_)),
      size_(other.size_),
      windows_(std::move(other.windows_)) {
  other.fd_ = -1;
}

FileReader& FileReader::operator=(FileReader&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    source_ = std::move(other.source_);
    direct_ = std::move(other.direct_);
    path_ = std::move(other.path_);
    size_ = other.size_;
    windows_ = std::move(other.windows_);
    other.fd_ = -1;
  }
  return *this;
}

FileReader::~FileReader() {
  if (fd_ >= 0) ::close(fd_);
}

const uint8_t* FileReader::at(uint64_t offset, uint64_t length) const {
  if (offset > size_ || length > size_ - offset) return nullptr;
  if (direct_)
    if (const uint8_t* bytes = direct_(offset, length)) return bytes;
  // The last few windows starting at or before offset (they may overlap; a
  // range none of them holds is read again, which costs bytes, not answers).
  auto it = windows_.upper_bound(offset);
  for (int looked = 0; looked < kWindowsLookedAt && it != windows_.begin(); ++looked) {
    --it;
    uint64_t into = offset - it->first;
    const Window& w = it->second;
    if (into <= w.length && length <= w.length - into) return w.bytes.get() + into;
  }
  bool walking = windows_.size() >= kWindowsBeforeWalking;
  // Walking windows lie on a grid, so the windows of a walk do not overlap;
  // the cell's window may lie behind more small ones than were looked at.
  uint64_t start = offset / (walking ? kWalkingMinimum : kAlign) * (walking ? kWalkingMinimum : kAlign);
  if (walking)
    for (auto [cell, last] = windows_.equal_range(start); cell != last; ++cell) {
      const Window& w = cell->second;
      if (offset - start + length <= w.length) return w.bytes.get() + (offset - start);
    }
  uint64_t end = std::min(size_, std::max(offset + length, start + (walking ? kWalkingMinimum : kMinimum)));
  Window w{end - start, std::make_unique_for_overwrite<uint8_t[]>(end - start)};
  if (!read_into(w.bytes.get(), start, w.length)) return nullptr;
  auto placed = windows_.emplace(start, std::move(w));
  return placed->second.bytes.get() + (offset - start);
}

bool FileReader::read_into(uint8_t* out, uint64_t offset, uint64_t length) const {
  if (source_) return source_(offset, length, out);
  for (uint64_t done = 0; done < length;) {
    ssize_t got = ::pread(fd_, out + done, length - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += static_cast<uint64_t>(got);
  }
  return true;
}

}  // namespace runpatch
