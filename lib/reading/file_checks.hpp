// What every reader and writer of a named file checks, and how it words a
// failed system call, so that the mapping, on-demand reads, the editor and the
// tree walk refuse the same files with the same words.
#pragma once

#include <fcntl.h>

#include <cerrno>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "runpatch/reading/expected.hpp"

namespace runpatch {

// Added to every open of a file named by a user: a FIFO or a terminal given by
// mistake is then refused by regular_file_size instead of waited on.
// (O_NONBLOCK changes nothing for regular files.)
constexpr int kOpenWithoutWaiting = O_NONBLOCK | O_NOCTTY;

// The size of the file open as fd, when it is a regular, non-empty file;
// otherwise an error naming path.
Expected<uint64_t> regular_file_size(int fd, const std::string& path);

// "ACTION: what went wrong" for a failed system call, from err (default: errno).
std::string errno_text(std::string_view action, int err = errno);

// A failed system call on file as an error (ErrorCode::SystemCall, errno_text's words).
Error system_error(std::string file, std::string_view action, int err = errno,
                   std::optional<uint64_t> offset = std::nullopt);

}  // namespace runpatch
