// Every public header of lib/scanning/ (include/runpatch/scanning/), for a consumer that wants the whole module.
#pragma once

#include "runpatch/scanning/scan.hpp"
