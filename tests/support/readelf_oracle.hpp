// The facts binutils' readelf reports, as an independent oracle for our reader.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace runpatch::test {

struct OracleFacts {
  bool has_dynamic = false;
  std::vector<std::string> needed;
  std::optional<std::string> runpath, rpath, soname, interpreter;
  std::vector<std::string> flags_1;
};

// nullopt when readelf is missing or fails on the file.
std::optional<OracleFacts> readelf_facts(const std::filesystem::path& file);

}  // namespace runpatch::test
