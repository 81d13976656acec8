// What a run over many files pays for power-cut safety: every file's edit
// synced on its own, or the files committed as a group (one barrier per
// commit step: syncfs, or parallel fdatasync). Each iteration copies the
// files afresh (dirty page cache, as a build leaves its outputs; --synced
// arguments sync first) and prepends a directory too long to fit in place,
// so every edit appends a segment, written into the file as the hooks do.
//
//   cmake -B build -DRUNPATCH_BUILD_BENCH=ON && cmake --build build --target runpatch_bench_commit
//   build/bench/runpatch_bench_commit [--benchmark_filter=...]   # RUNPATCH_BENCH_LIBS=DIR picks the files
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "runpatch/editing/commit_group.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "runpatch/reading/elf_info.hpp"
#include "runpatch/scanning/scan.hpp"

namespace fs = std::filesystem;
using namespace runpatch;

namespace {

constexpr size_t kFiles = 64;

// Dynamically linked shared libraries of the system, read-only: copied before each run.
std::vector<fs::path> source_libraries() {
  const char* dir = std::getenv("RUNPATCH_BENCH_LIBS");
  fs::path from = dir ? dir : "/usr/lib/x86_64-linux-gnu";
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(from)) {
    if (found.size() == kFiles) break;
    // Libraries of every-day size (the big ones are bench/driver.sh's CUDA tree).
    if (!entry.is_regular_file() || entry.is_symlink() ||
        entry.path().filename().string().find(".so") == std::string::npos || entry.file_size() > (4u << 20))
      continue;
    auto info = read_elf_info(entry.path());
    if (info && info->has_dynamic && info->type == 3 /*ET_DYN*/) found.push_back(entry.path());
  }
  return found;
}

enum Mode { EachAlone, GroupSyncfs, GroupFdatasync };

std::vector<fs::path> fresh_copies(const std::vector<fs::path>& sources, bool synced) {
  fs::path dir = fs::temp_directory_path() / ("runpatch-bench-commit-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<fs::path> copies;
  for (const auto& s : sources) {
    copies.push_back(dir / s.filename());
    fs::copy_file(s, copies.back());
  }
  if (synced) ::sync();
  return copies;
}

void edit_all(benchmark::State& state, Mode mode, bool synced) {
  auto sources = source_libraries();
  if (sources.empty()) {
    state.SkipWithError("no shared libraries to copy (set RUNPATCH_BENCH_LIBS)");
    return;
  }
  EditRequest request;
  request.runpath = add_runpath_update("/run/opengl-driver/lib:" + std::string(200, 'x'), true, true);
  size_t barriers = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto copies = fresh_copies(sources, synced);
    state.ResumeTiming();
    EditOptions options;
    options.in_place = true;
    options.durability = Durability::Sync;
    CommitGroup group(Durability::Sync,
                      mode == GroupFdatasync ? CommitGroup::Barrier::EachFile : CommitGroup::Barrier::FileSystem);
    if (mode != EachAlone) options.group = &group;
    parallel_for(copies.size(), 0, [&](size_t i) {
      if (!edit_elf_file(copies[i], request, options)) std::abort();
    });
    if (!group.commit().empty()) std::abort();
    barriers = group.barriers();
    state.PauseTiming();
    fs::remove_all(copies.front().parent_path());
    state.ResumeTiming();
  }
  state.counters["files"] = double(sources.size());
  state.counters["barriers"] = double(barriers);
}

}  // namespace

BENCHMARK_CAPTURE(edit_all, each_file_alone_dirty, EachAlone, false)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(edit_all, group_syncfs_dirty, GroupSyncfs, false)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(edit_all, group_fdatasync_dirty, GroupFdatasync, false)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(edit_all, each_file_alone_synced, EachAlone, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(edit_all, group_syncfs_synced, GroupSyncfs, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(edit_all, group_fdatasync_synced, GroupFdatasync, true)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
