// LIEF (an independent parser) agrees with our reader on every fixture.
#include <gtest/gtest.h>

#include <LIEF/ELF.hpp>

#include "fixtures.hpp"
#include "runpatch/reading/elf_info.hpp"

namespace runpatch {
namespace {

struct LiefFacts {
  std::vector<std::string> needed;
  std::optional<std::string> runpath, rpath, soname, interpreter;
  uint16_t machine = 0;
  bool is64 = false;
};

LiefFacts lief_facts(const std::filesystem::path& path) {
  LiefFacts facts;
  auto binary = LIEF::ELF::Parser::parse(path.string());
  facts.machine = static_cast<uint16_t>(binary->header().machine_type());
  facts.is64 = binary->type() == LIEF::ELF::ELF_CLASS::ELFCLASS64;
  if (binary->has_interpreter()) facts.interpreter = binary->interpreter();
  for (const LIEF::ELF::DynamicEntry& entry : binary->dynamic_entries()) {
    switch (entry.tag()) {
      case LIEF::ELF::DYNAMIC_TAGS::DT_NEEDED:
        facts.needed.push_back(dynamic_cast<const LIEF::ELF::DynamicEntryLibrary&>(entry).name());
        break;
      case LIEF::ELF::DYNAMIC_TAGS::DT_RUNPATH:
        if (!facts.runpath) facts.runpath = dynamic_cast<const LIEF::ELF::DynamicEntryRunPath&>(entry).runpath();
        break;
      case LIEF::ELF::DYNAMIC_TAGS::DT_RPATH:
        if (!facts.rpath) facts.rpath = dynamic_cast<const LIEF::ELF::DynamicEntryRpath&>(entry).rpath();
        break;
      case LIEF::ELF::DYNAMIC_TAGS::DT_SONAME:
        facts.soname = dynamic_cast<const LIEF::ELF::DynamicSharedObject&>(entry).name();
        break;
      default: break;
    }
  }
  return facts;
}

TEST(LiefOracle, ReaderMatchesLiefOnEveryFixture) {
  int compared = 0;
  for (const auto& arch : test::fixture_arches()) {
    for (const auto& name : test::fixture_names()) {
      auto path = arch.dir / name;
      SCOPED_TRACE(path.string());
      auto ours = read_elf_info(path);
      ASSERT_TRUE(ours) << ours.error().message();
      LiefFacts theirs;
      try {
        theirs = lief_facts(path);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "LIEF failed: " << e.what();
        continue;
      }
      EXPECT_EQ(ours->needed, theirs.needed);
      EXPECT_EQ(ours->runpath, theirs.runpath);
      EXPECT_EQ(ours->rpath, theirs.rpath);
      EXPECT_EQ(ours->soname, theirs.soname);
      EXPECT_EQ(ours->interpreter, theirs.interpreter);
      EXPECT_EQ(ours->identity.machine, theirs.machine);
      EXPECT_EQ(ours->identity.elf_class == ElfClass::Elf64, theirs.is64);
      ++compared;
    }
  }
  EXPECT_GE(compared, 10);
}

}  // namespace
}  // namespace runpatch
