#include <fmt/format.h>

#include "runpatch/reading/expected.hpp"

namespace runpatch {

std::string Error::message() const {
  std::string text = file.empty() ? what : file + ": " + what;
  if (offset) text += fmt::format(" (at offset {:#x})", *offset);
  return text;
}

Error make_error(ErrorCode code, std::string file, std::string what, std::optional<uint64_t> offset) {
  return Error{code, std::move(file), std::move(what), offset};
}

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::SystemCall: return "system-call";
    case ErrorCode::NotRegularFile: return "not-regular-file";
    case ErrorCode::FileChanged: return "file-changed";
    case ErrorCode::NotElf: return "not-elf";
    case ErrorCode::Malformed: return "malformed";
    case ErrorCode::NothingToEdit: return "nothing-to-edit";
    case ErrorCode::InvalidRequest: return "invalid-request";
    case ErrorCode::Unsupported: return "unsupported";
    case ErrorCode::TooManyProgramHeaders: return "too-many-program-headers";
    case ErrorCode::ProgramHeadersCannotMove: return "program-headers-cannot-move";
    case ErrorCode::HoleTooLarge: return "hole-too-large";
    case ErrorCode::NoAddressSpace: return "no-address-space";
    case ErrorCode::NotOneWrite: return "not-one-write";
    case ErrorCode::ResolutionCacheExists: return "resolution-cache-exists";
    case ErrorCode::VerificationFailed: return "verification-failed";
    case ErrorCode::InvalidInput: return "invalid-input";
    case ErrorCode::Usage: return "usage";
    case ErrorCode::CannotTrace: return "cannot-trace";
  }
  return "unknown";
}

}  // namespace runpatch
