// Every public header of lib/autopatchelf/ (include/runpatch/autopatchelf/), for a consumer that wants the whole
// module.
#pragma once

#include "runpatch/autopatchelf/auto_patchelf.hpp"
