// Every public header of lib/policy/ (include/runpatch/policy/), for a consumer that wants the whole module.
#pragma once

#include "runpatch/policy/policy.hpp"
