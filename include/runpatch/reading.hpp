// Every public header of lib/reading/ (include/runpatch/reading/), for a consumer that wants the whole module.
#pragma once

#include "runpatch/reading/elf_info.hpp"
#include "runpatch/reading/elf_types.hpp"
#include "runpatch/reading/expected.hpp"
#include "runpatch/reading/loader_paths.hpp"
#include "runpatch/reading/machines.hpp"
#include "runpatch/reading/mapped_file.hpp"
#include "runpatch/reading/resolution_cache_format.hpp"
#include "runpatch/reading/section_audit.hpp"
