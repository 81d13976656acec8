// A report file named on the command line (check --junit, --sarif, trace -o). It is
// opened before the work, so that a path that cannot be written is refused at
// once rather than after minutes of checking, and every write and the close
// are checked, so that a report is never lost without a word.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace runpatch::cli {

// A report that cannot be written (opened or completed) is an error in what
// the command line asks: it logs the reason and is exit 2, in every command.
int report_unwritable(const std::string& error);

class OutputFile {
 public:
  // Creates or truncates path; on failure, "cannot write PATH: REASON" in error.
  static std::optional<OutputFile> open(const std::string& path, std::string& error);

  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&& other) noexcept;
  OutputFile(const OutputFile&) = delete;
  ~OutputFile();

  // Writes all of text and closes the file; false with the reason in error.
  bool write_and_close(std::string_view text, std::string& error);

 private:
  OutputFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
};

}  // namespace runpatch::cli
