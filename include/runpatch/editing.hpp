// Every public header of lib/editing/ (include/runpatch/editing/), for a consumer that wants the whole module.
#pragma once

#include "runpatch/editing/edit.hpp"
#include "runpatch/editing/edit_options.hpp"
#include "runpatch/editing/edit_outcome.hpp"
#include "runpatch/editing/edit_request.hpp"
#include "runpatch/editing/header_edit.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "runpatch/editing/commit_group.hpp"
