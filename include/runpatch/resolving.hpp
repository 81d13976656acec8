// Every public header of lib/resolving/ (include/runpatch/resolving/), for a consumer that wants the whole module.
#pragma once

#include "runpatch/resolving/ld_so_cache.hpp"
#include "runpatch/resolving/loader_model.hpp"
#include "runpatch/resolving/resolution_cache.hpp"
#include "runpatch/resolving/resolve.hpp"
