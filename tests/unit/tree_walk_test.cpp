#include <gtest/gtest.h>

#include "fixtures.hpp"
#include "runpatch/scan.hpp"
#include "synthetic_elf.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;

TEST(TreeWalk, EachInodeOnceRealPathsPreferredLoopsStop) {
  fs::path root = test::scratch_dir("tree_walk");
  test::SyntheticSpec spec;
  spec.needed = {"libc.so.6"};
  test::write_file(root / "lib/libreal.so.1", test::build_synthetic_elf(spec).bytes);
  test::write_file(root / "lib/notes.txt", {'h', 'i'});
  test::write_file(root / "bin/tool", test::build_synthetic_elf(spec).bytes);
  fs::create_symlink("libreal.so.1", root / "lib/libreal.so");   // sorts before its target
  fs::create_symlink("../lib", root / "bin/lib-link");           // directory symlink
  fs::create_symlink("..", root / "lib/loop");                     // a cycle
  fs::create_symlink("missing", root / "lib/dangling");
  fs::create_hard_link(root / "bin/tool", root / "bin/tool-hardlink");

  TreeListing listing = list_elf_files({root});
  std::vector<fs::path> expected = {root / "bin/tool", root / "lib/libreal.so.1"};
  EXPECT_EQ(listing.elf_files, expected);
  EXPECT_EQ(listing.non_elf_files, 1u);
  EXPECT_TRUE(listing.problems.empty());
}

TEST(TreeWalk, MissingRootIsAProblem) {
  TreeListing listing = list_elf_files({"/nonexistent/runpatch-root"});
  ASSERT_EQ(listing.problems.size(), 1u);
  EXPECT_NE(listing.problems[0].message().find("/nonexistent/runpatch-root"), std::string::npos);
}

TEST(ParallelFor, VisitsEveryIndexOnce) {
  std::vector<std::atomic<int>> hits(1000);
  parallel_for(hits.size(), 4, [&](size_t i) { hits[i].fetch_add(1); });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

}  // namespace
}  // namespace runpatch
