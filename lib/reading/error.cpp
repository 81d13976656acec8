#include <fmt/format.h>

#include "runpatch/reading/expected.hpp"

namespace runpatch {

std::string Error::message() const {
  std::string text = file.empty() ? what : file + ": " + what;
  if (offset) text += fmt::format(" (at offset {:#x})", *offset);
  return text;
}

Error make_error(std::string file, std::string what, std::optional<uint64_t> offset) {
  return Error{std::move(file), std::move(what), offset};
}

}  // namespace runpatch
