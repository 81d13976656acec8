// read_elf_info over a FileReader: a file read on demand, or an image that
// exists only in memory (the editor verifies its planned result this way).
#pragma once

#include "reading/file_reader.hpp"
#include "runpatch/reading/elf_info.hpp"

namespace runpatch {

Expected<ElfInfo> read_elf_info(const FileReader& file, DynamicSource source = DynamicSource::Segment);

}  // namespace runpatch
