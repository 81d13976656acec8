// The relocations the rename verifier compares (read_relocations): every entry
// of the tables the dynamic section lists, once — GNU ld's DT_RELA range
// often includes DT_JMPREL's — with its fields in the file's class and byte
// order, on every class and byte order.
#include <gtest/gtest.h>

#include "editing/symbol_rename.hpp"
#include "elf_image.hpp"
#include "reading/elf_dispatch.hpp"
#include "runpatch/reading/elf_types.hpp"
#include "synthetic_elf.hpp"

namespace runpatch {
namespace {

using Flavour = test::ElfFlavour;

// Reads the relocations of `ranges` (offset, size, rela) from the image.
std::vector<RelocationEntry> read(const std::vector<uint8_t>& bytes,
                                  const std::vector<SymbolTables::Relocations>& ranges) {
  SymbolTables tables;
  tables.relocations = ranges;
  auto read = visit_elf(bytes, "relocations.so", [&](const auto& view) { return read_relocations(view, tables); });
  EXPECT_TRUE(read) << read.error().message();
  return read ? *read : std::vector<RelocationEntry>{};
}

class Relocations : public ::testing::TestWithParam<Flavour> {};

TEST_P(Relocations, EachEntryOnceWithItsFields) {
  const Flavour f = GetParam();
  const bool rela = f.is64;  // ELF64 files use RELA, most ELF32 files REL
  const std::vector<test::RelocationDesc> dynamic = {{0x1000, 0, 8, 0x40}, {0x1008, 3, 1, 0}, {0x1010, 2, 6, 0}};
  const std::vector<test::RelocationDesc> plt = {{0x2000, 4, 7, 0}, {0x2008, 5, 7, 0}};
  std::vector<test::RelocationDesc> all = dynamic;
  all.insert(all.end(), plt.begin(), plt.end());
  test::ImageDesc desc{.flavour = f};
  desc.sections = {{.name = ".rela.dyn",
                    .type = rela ? elf::SHT_RELA : elf::SHT_REL,
                    .addralign = 8,
                    .bytes = test::relocation_table(f, rela, all)}};
  desc.segments = {{elf::PT_LOAD, elf::PF_R, 0x1000, test::kFileStart, test::kFileEnd}};
  auto image = test::build_elf_image(desc);
  const auto& place = image.section(".rela.dyn");
  const uint64_t entry = test::relocation_entry_size(f, rela);
  const SymbolTables::Relocations whole{{place.offset, place.size}, rela};
  const SymbolTables::Relocations plt_part{{place.offset + dynamic.size() * entry, plt.size() * entry}, rela};
  const SymbolTables::Relocations dynamic_part{{place.offset, dynamic.size() * entry}, rela};
  // DT_RELA spanning DT_JMPREL's entries, and the two tables apart: the same five entries.
  for (const auto& ranges : {std::vector{whole, plt_part}, std::vector{dynamic_part, plt_part}}) {
    auto entries = read(image.bytes, ranges);
    ASSERT_EQ(entries.size(), all.size());
    for (size_t i = 0; i < all.size(); ++i) {
      SCOPED_TRACE(i);
      EXPECT_EQ(entries[i].offset, place.offset + i * entry);
      EXPECT_EQ(entries[i].where, all[i].where);
      EXPECT_EQ(entries[i].symbol, all[i].symbol);
      EXPECT_EQ(entries[i].type, all[i].type);
      EXPECT_EQ(entries[i].addend, rela ? all[i].addend : 0);
    }
  }
  // A range that starts inside an earlier one's entry is not the same entries: read on its own grid.
  const SymbolTables::Relocations misaligned{{place.offset + entry / 2, entry}, rela};
  EXPECT_EQ(read(image.bytes, {dynamic_part, misaligned}).size(), dynamic.size() + 1);
}

INSTANTIATE_TEST_SUITE_P(AllTargets, Relocations, ::testing::ValuesIn(test::every_elf_flavour()),
                         test::FlavourTestName());

}  // namespace
}  // namespace runpatch
