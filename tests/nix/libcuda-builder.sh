# A libcuda.so.1 stand-in ($which: driver or compat) in $out/$dir; code padding
# and libc make it look like a real one, not the toolkit's link-time stub.
set -euo pipefail
export PATH=/usr/bin:/bin
mkdir -p "$out/$dir"
gcc -O2 -fPIC -shared -Wl,-soname,libcuda.so.1 -DLIBCUDA_ORIGIN="\"$which\"" -DLIBCUDA_CODE_PADDING='"131072"' \
  -o "$out/$dir/libcuda.so.1" "$fixtureSources/fake_libcuda.c" -Wl,--no-as-needed -lc
