// Durability::Auto: the files of the running system wait for the disk, build
// outputs and everything else keep only the write order (docs/editing.md §4).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "fixtures.hpp"
#include "runpatch/editing/edit_options.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;

class Durable : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* top = std::getenv("NIX_BUILD_TOP")) saved_ = top;
    ::unsetenv("NIX_BUILD_TOP");
  }
  void TearDown() override {
    if (saved_.empty())
      ::unsetenv("NIX_BUILD_TOP");
    else
      ::setenv("NIX_BUILD_TOP", saved_.c_str(), 1);
  }
  std::string saved_;
};

TEST_F(Durable, AutoSyncsOnlyTheRunningSystemsFiles) {
  fs::path scratch = test::scratch_dir("durability") / "libx.so";
  for (const char* system : {"/usr/lib/libx.so", "/lib/x86_64-linux-gnu/libx.so", "/etc/ld.so.cache", "/opt/x/lib.so",
                             "/boot/vmlinuz", "/usr/local/cuda-13.0/lib64/libcudart.so"})
    EXPECT_TRUE(syncs(Durability::Auto, system)) << system;
  for (const char* elsewhere : {"/nix/store/abc-foo/lib/libx.so", "/home/u/build/out/libx.so", "/tmp/x/lib.so",
                                "/usrlocal/lib.so", "relative/lib.so"})
    EXPECT_FALSE(syncs(Durability::Auto, elsewhere)) << elsewhere;
  EXPECT_FALSE(syncs(Durability::Auto, scratch));
  // A directory link into the system counts as where it leads.
  fs::path link = scratch.parent_path() / "etc-link";
  fs::remove(link);
  fs::create_directory_symlink("/etc", link);
  EXPECT_TRUE(syncs(Durability::Auto, link / "hosts"));
  // The flags decide either way; inside a Nix build Auto never waits.
  EXPECT_TRUE(syncs(Durability::Sync, scratch));
  EXPECT_FALSE(syncs(Durability::NoSync, "/usr/lib/libx.so"));
  ::setenv("NIX_BUILD_TOP", "/build", 1);
  EXPECT_FALSE(syncs(Durability::Auto, "/usr/lib/libx.so"));
}

}  // namespace
}  // namespace runpatch
