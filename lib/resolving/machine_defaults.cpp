#include "resolving/machine_defaults.hpp"

#include "runpatch/reading/machines.hpp"

namespace runpatch {

MachineDefaults machine_defaults(const ElfIdentity& id) {
  MachineDefaults d;
  if (const MachineFacts* facts = machine_facts(id.machine)) {
    const MachineAbi& abi = facts->abi(id.byte_order);
    d = {std::string(abi.interpreter),
         std::string(abi.multiarch),
         std::string(abi.platform),
         {},
         std::string(abi.musl_arch)};
  }
  if (!d.multiarch.empty()) d.default_dirs = {"/lib/" + d.multiarch, "/usr/lib/" + d.multiarch};
  d.default_dirs.push_back("/lib");
  d.default_dirs.push_back("/usr/lib");
  return d;
}

}  // namespace runpatch
