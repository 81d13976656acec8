#include "reading/file_checks.hpp"

#include <sys/stat.h>

#include <cstring>

namespace runpatch {

std::string errno_text(std::string_view action, int err) {
  std::string text(action);
  if (err == ETXTBSY) return text + ": the file is a running program (text file busy)";
  return text + ": " + std::strerror(err);
}

Error system_error(std::string file, std::string_view action, int err, std::optional<uint64_t> offset) {
  return make_error(ErrorCode::SystemCall, std::move(file), errno_text(action, err), offset);
}

Expected<uint64_t> regular_file_size(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return system_error(path, "cannot stat");
  if (!S_ISREG(st.st_mode)) return make_error(ErrorCode::NotRegularFile, path, "not a regular file");
  if (st.st_size == 0) return make_error(ErrorCode::NotRegularFile, path, "file is empty");
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace runpatch
