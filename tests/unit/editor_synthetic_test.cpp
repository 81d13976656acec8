// The editor on in-memory-built images of every class and byte order: both
// strategies, tag conversions, and duplicate runpath tags.
#include <gtest/gtest.h>

#include "fixtures.hpp"
#include "readelf_oracle.hpp"
#include "runpatch/editing/edit.hpp"
#include "runpatch/editing/runpath_ops.hpp"
#include "synthetic_elf.hpp"

namespace runpatch {
namespace {

namespace fs = std::filesystem;

class EditorAllTargets : public ::testing::TestWithParam<test::ElfFlavour> {
 protected:
  fs::path make(const std::string& name, test::SyntheticSpec spec) {
    spec.is64 = GetParam().is64;
    spec.big_endian = GetParam().big;
    fs::path file = test::scratch_dir("editor_synthetic/" + name + std::to_string(GetParam().is64) +
                                      std::to_string(GetParam().big)) /
                    "lib.so";
    test::write_file(file, test::build_synthetic_elf(spec).bytes);
    return file;
  }
  static test::SyntheticSpec base() {
    test::SyntheticSpec spec;
    spec.needed = {"libfoo.so.1", "libbar.so.2"};
    spec.soname = "libme.so";
    spec.runpath = "/a/fairly/long/original/runpath:/second/entry";
    spec.spare_dynamic_slots = 2;
    return spec;
  }
};

TEST_P(EditorAllTargets, ShorterRunpathInPlaceLongerAppended) {
  fs::path file = make("grow", base());
  EditRequest shorter;
  shorter.runpath = set_runpath_update("/short");
  auto a = edit_elf_file(file, shorter);
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(a->strategy, EditStrategy::InPlace);
  EXPECT_EQ(read_elf_info(file)->runpath, "/short");
  EditRequest longer;
  longer.runpath = set_runpath_update(std::string(500, 'L'));
  auto b = edit_elf_file(file, longer);
  ASSERT_TRUE(b) << b.error().message();
  EXPECT_EQ(b->strategy, EditStrategy::Appended);
  auto info = read_elf_info(file);
  ASSERT_TRUE(info) << info.error().message();
  EXPECT_EQ(info->runpath, std::string(500, 'L'));
  EXPECT_EQ(info->needed, (std::vector<std::string>{"libfoo.so.1", "libbar.so.2"}));
  EXPECT_EQ(info->soname, "libme.so");
  auto oracle = test::readelf_facts(file);
  ASSERT_TRUE(oracle);
  EXPECT_EQ(oracle->runpath, std::string(500, 'L'));
  EXPECT_EQ(oracle->needed, info->needed);
}

TEST_P(EditorAllTargets, NewTagUsesSpareSlotAndConvertsRpath) {
  auto spec = base();
  spec.runpath.reset();
  spec.rpath = "/old/rpath/that/is/long/enough";
  fs::path file = make("convert", spec);
  EditRequest to_runpath;
  to_runpath.runpath = set_runpath_update("/new");
  ASSERT_TRUE(edit_elf_file(file, to_runpath));
  auto info = read_elf_info(file);
  EXPECT_EQ(info->runpath, "/new");
  EXPECT_FALSE(info->rpath.has_value());
  EditRequest soname;
  soname.soname = "libme.so";  // same: no change
  EXPECT_EQ(edit_elf_file(file, soname)->strategy, EditStrategy::Unchanged);
}

TEST_P(EditorAllTargets, BothRunpathKindsCollapseToOne) {
  auto spec = base();
  spec.rpath = "/the/rpath";  // DT_RPATH and DT_RUNPATH at once: ld.so uses DT_RUNPATH
  fs::path file = make("both", spec);
  EditRequest force;
  force.runpath = set_runpath_update("/forced");
  force.force_rpath = true;
  ASSERT_TRUE(edit_elf_file(file, force));
  auto info = read_elf_info(file);
  EXPECT_EQ(info->rpath, "/forced");
  EXPECT_FALSE(info->runpath.has_value());
  EditRequest remove;
  remove.runpath = remove_runpath_update();
  ASSERT_TRUE(edit_elf_file(file, remove));
  info = read_elf_info(file);
  EXPECT_FALSE(info->rpath.has_value());
  EXPECT_FALSE(info->runpath.has_value());
  EditRequest empty;
  empty.runpath = set_runpath_update("");  // an empty runpath is not the same as none
  ASSERT_TRUE(edit_elf_file(file, empty));
  EXPECT_EQ(read_elf_info(file)->runpath, "");
}

TEST_P(EditorAllTargets, EditsFileWithoutSectionHeaders) {
  auto spec = base();
  spec.with_section_headers = false;
  fs::path file = make("noshdr", spec);
  EditRequest request;
  request.runpath = set_runpath_update(std::string(300, 'x'));
  request.add_needed = {"libnew.so"};
  ASSERT_TRUE(edit_elf_file(file, request));
  auto info = read_elf_info(file);
  ASSERT_TRUE(info) << info.error().message();
  EXPECT_EQ(info->runpath, std::string(300, 'x'));
  EXPECT_EQ(info->needed.front(), "libnew.so");
  EXPECT_EQ(info->shnum, 0u);
}

INSTANTIATE_TEST_SUITE_P(Targets, EditorAllTargets, ::testing::ValuesIn(test::every_elf_flavour()),
                         test::FlavourTestName());

}  // namespace
}  // namespace runpatch
