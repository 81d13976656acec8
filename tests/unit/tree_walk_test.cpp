#include <gtest/gtest.h>

#include "fixtures.hpp"
#include "runpatch/scanning/scan.hpp"
#include "synthetic_elf.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;

// A tree as Nix outputs are arranged: out/ holds its own files, a symlinked
// directory and a symlinked file into dep/ (another store path), a symlink to
// its own file, a cycle, a dangling link and a hard link.
fs::path make_outputs(const std::string& name) {
  fs::path root = test::scratch_dir(name);
  test::SyntheticSpec spec;
  spec.needed = {"libc.so.6"};
  auto elf = test::build_synthetic_elf(spec).bytes;
  test::write_file(root / "out/lib/libreal.so.1", elf);
  test::write_file(root / "out/lib/notes.txt", {'h', 'i'});
  test::write_file(root / "out/bin/tool", elf);
  test::write_file(root / "dep/lib/libdep.so.1", elf);
  test::write_file(root / "dep/lib/libext.so.2", elf);
  fs::create_symlink("libreal.so.1", root / "out/lib/libreal.so");                // sorts before its target
  fs::create_symlink("../lib", root / "out/bin/lib-link");                        // directory symlink inside the tree
  fs::create_symlink("../../dep/lib", root / "out/lib/deplink");                  // directory symlink out of the tree
  fs::create_symlink("../../dep/lib/libext.so.2", root / "out/lib/libext.so.2");  // file symlink out of it
  fs::create_symlink("..", root / "out/lib/loop");                                // a cycle
  fs::create_symlink("missing", root / "out/lib/dangling");
  fs::create_hard_link(root / "out/bin/tool", root / "out/bin/tool-hardlink");
  return root;
}

TEST(TreeWalk, LikeFindTypeFSymlinksInsideATreeAreNeitherEnteredNorListed) {
  fs::path root = make_outputs("tree_walk_find");
  TreeListing listing = list_elf_files({root / "out"});
  // Hard links are one file: edited once, listed under the smallest name.
  std::vector<fs::path> expected = {root / "out/bin/tool", root / "out/lib/libreal.so.1"};
  EXPECT_EQ(listing.elf_files, expected);
  EXPECT_EQ(listing.non_elf_files, 1u);
  EXPECT_EQ(listing.symlinks_skipped, 6u);
  EXPECT_TRUE(listing.problems.empty());
}

TEST(TreeWalk, FollowedLinksVisitEachInodeOnceRealPathsPreferredLoopsStop) {
  fs::path root = make_outputs("tree_walk_follow");
  TreeListing listing = list_elf_files({root / "out"}, TreeSymlinks::Followed);
  // libext.so.2 is reached only through links: the smaller of its two paths wins.
  std::vector<fs::path> expected = {root / "out/bin/tool", root / "out/lib/deplink/libdep.so.1",
                                    root / "out/lib/deplink/libext.so.2", root / "out/lib/libreal.so.1"};
  EXPECT_EQ(listing.elf_files, expected);
  EXPECT_EQ(listing.symlinks_skipped, 0u);
  EXPECT_TRUE(listing.problems.empty());
}

TEST(TreeWalk, SymlinksNamedAsRootsAreFollowed) {
  fs::path root = make_outputs("tree_walk_roots");
  // As patchelf takes a symlink on its command line: the target is meant.
  TreeListing dir = list_elf_files({root / "out/lib/deplink"});
  std::vector<fs::path> expected = {root / "out/lib/deplink/libdep.so.1", root / "out/lib/deplink/libext.so.2"};
  EXPECT_EQ(dir.elf_files, expected);
  EXPECT_TRUE(dir.problems.empty());
  TreeListing file = list_elf_files({root / "out/lib/libext.so.2"});
  EXPECT_EQ(file.elf_files, std::vector<fs::path>{root / "out/lib/libext.so.2"});
}

TEST(TreeWalk, OverlappingRootsListEachFileOnce) {
  fs::path root = make_outputs("tree_walk_overlap");
  TreeListing listing = list_elf_files({root / "out/lib", root / "out", root / "out/lib/libreal.so.1"});
  std::vector<fs::path> expected = {root / "out/bin/tool", root / "out/lib/libreal.so.1"};
  EXPECT_EQ(listing.elf_files, expected);
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
