#!/usr/bin/python3
"""The way Nixpkgs' Python auto-patchelf hook works, for benchmarking only:
pyelftools reads every file, an index maps library names to directories, and
one patchelf process per edit writes the result. Written for this benchmark
(same structure as the hook: scan, index, then patchelf per file)."""
import os
import subprocess
import sys

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile


def elf_facts(path):
    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            needed, interp = [], None
            for seg in elf.iter_segments():
                if seg.header.p_type == "PT_INTERP":
                    interp = seg.get_interp_name()
            dyn = elf.get_section_by_name(".dynamic")
            if isinstance(dyn, DynamicSection):
                needed = [t.needed for t in dyn.iter_tags() if t.entry.d_tag == "DT_NEEDED"]
            return elf["e_machine"], needed, interp, dyn is not None
    except (ELFError, OSError, ValueError):
        return None


def main():
    interpreter, paths = sys.argv[1], sys.argv[2:]
    files = []
    for root in paths:
        for d, _, names in os.walk(root):
            files += [os.path.join(d, n) for n in sorted(names) if not os.path.islink(os.path.join(d, n))]
    facts = {f: elf_facts(f) for f in files}
    index = {}
    for f, fact in facts.items():
        if fact and ".so" in os.path.basename(f):
            index.setdefault((os.path.basename(f), fact[0]), os.path.dirname(f))
    for f, fact in facts.items():
        if not fact or not fact[3]:
            continue
        machine, needed, interp, _ = fact
        if interp:
            subprocess.run(["patchelf", "--set-interpreter", interpreter, f], check=True)
        rpath = []
        for n in needed:
            d = index.get((n, machine))
            if d and d not in rpath:
                rpath.append(d)
        if rpath:
            subprocess.run(["patchelf", "--set-rpath", ":".join(rpath), f], check=True)


main()
