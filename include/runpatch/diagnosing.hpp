// Every public header of lib/diagnosing/ (include/runpatch/diagnosing/), for a consumer that wants the whole module.
#pragma once

#include "runpatch/diagnosing/diagnose.hpp"
#include "runpatch/diagnosing/doctor.hpp"
