// A report file named on the command line (check --junit, --sarif, trace -o). It is
// opened before the work, so that a path that cannot be written is refused at
// once rather than after minutes of checking, and every write and the close
// are checked, so that a report is never lost without a word.
#pragma once

#include <string>
#include <string_view>

#include "runpatch/reading/expected.hpp"

namespace runpatch::cli {

// A report that cannot be written (opened or completed) is an error in what
// the command line asks: it logs the reason and is exit 2, in every command.
int report_unwritable(const Error& error);

class OutputFile {
 public:
  // Creates or truncates path; on failure a SystemCall error: "PATH: cannot write: REASON".
  static Expected<OutputFile> open(const std::string& path);

  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&& other) noexcept;
  OutputFile(const OutputFile&) = delete;
  ~OutputFile();

  // Writes all of text and closes the file.
  Status write_and_close(std::string_view text);

 private:
  OutputFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
};

}  // namespace runpatch::cli
