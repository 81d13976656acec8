// Every public header of lib/checking/ (include/runpatch/checking/), for a consumer that wants the whole module.
#pragma once

#include "runpatch/checking/check.hpp"
