// Every public header of lib/cuda/ (include/runpatch/cuda/), for a consumer that wants the whole module.
#pragma once

#include "runpatch/cuda/cuda.hpp"
#include "runpatch/cuda/l4t_versions.hpp"
