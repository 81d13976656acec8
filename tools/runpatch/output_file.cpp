#include "output_file.hpp"

#include "../common/exit_codes.hpp"
#include "../common/log.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace runpatch::cli {

namespace {

Error cannot_write(const std::string& path, int err) {
  return make_error(ErrorCode::SystemCall, path, fmt::format("cannot write: {}", std::strerror(err)));
}

}  // namespace

int report_unwritable(const Error& error) {
  log_error("{}", error.message());
  return exit_code_for(error, ErrorSource::CommandLine);
}

Expected<OutputFile> OutputFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0666);
  if (fd < 0) return cannot_write(path, errno);
  return OutputFile(path, fd);
}

OutputFile::OutputFile(OutputFile&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_) { other.fd_ = -1; }

OutputFile& OutputFile::operator=(OutputFile&& other) noexcept {
  std::swap(path_, other.path_);
  std::swap(fd_, other.fd_);
  return *this;
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status OutputFile::write_and_close(std::string_view text) {
  while (!text.empty()) {
    ssize_t n = ::write(fd_, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return cannot_write(path_, n < 0 ? errno : EIO);
    text.remove_prefix(static_cast<size_t>(n));
  }
  int fd = fd_;
  fd_ = -1;
  // Some file systems (NFS) report a failed write only at close.
  if (::close(fd) != 0) return cannot_write(path_, errno);
  return {};
}

}  // namespace runpatch::cli
