// Text and JSON renderings of what the reader found.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "runpatch/reading/elf_info.hpp"

namespace runpatch {

// Multi-line, readelf-spirited description of one file.
std::string format_elf_info(const ElfInfo& info);

// One line per file, for tree scans: "PATH: KIND MACHINE runpath=… needed=…".
std::string format_scan_line(const ElfInfo& info);

nlohmann::json elf_info_json(const ElfInfo& info);

}  // namespace runpatch
