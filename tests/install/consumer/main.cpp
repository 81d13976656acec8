// A tiny consumer of the installed library: prints a file's runpath.
#include <iostream>

#include "runpatch/reading/elf_info.hpp"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto info = runpatch::read_elf_info(argv[1]);
  if (!info) {
    std::cerr << info.error().message() << "\n";
    return 1;
  }
  std::cout << info->runpath.value_or("") << "\n";
  return 0;
}
