// A generated corpus of malformed ELF files: every way of breaking a file
// that the reader and editor must turn into one clear error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runpatch/reading/expected.hpp"

namespace runpatch::test {

struct MalformedCase {
  std::string name;  // also a file name
  std::vector<uint8_t> bytes;
  std::string error;                      // a part of the one error message expected
  ErrorCode code = ErrorCode::Malformed;  // and its kind
};

// Truncations, offsets past EOF, overlapping and huge tables, DT_STRTAB outside
// every segment, missing NUL terminators, e_phnum = PN_XNUM with a bad
// extension, wrong entry sizes, big-endian headers over little-endian data;
// for ELF64 and ELF32, both byte orders.
std::vector<MalformedCase> malformed_corpus();

}  // namespace runpatch::test
