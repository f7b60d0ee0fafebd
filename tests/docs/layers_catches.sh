#!/bin/sh
# tests/docs/test_layers.py must fail on a copy of the sources with five
# plants, and name each: an include that crosses a layer, one from the
# OpenCL plugin into libopreg's internals, one that climbs out of its folder
# by a relative path, a folder of sources with no row, and an exception in
# the doc that matches no include. Includes in comments are no plants.
#   layers_catches.sh SOURCE_DIR WORK_DIR
set -eu
src=$1 work=$2
rm -rf "$work"
mkdir -p "$work/docs"
(cd "$src" && find . \( -path './build*' -o -path './_build*' -o -path './install*' -o -path './.*' \) -prune \
   -o -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cpp' -o -name '*.hpp' \) \
   -print | tar -cf - -T -) | (cd "$work" && tar -xf -)
cp "$src/docs/architecture.md" "$work/docs/"
python3 "$src/tests/docs/test_layers.py" "$work" >/dev/null || {
  echo "FAIL: the check fails on the unplanted copy"; exit 1; }

printf '%s\n' '#include "ops/ops_internal.h"' '#include "registry/internal.h"' \
  '/* #include "registry/internal.h" */' '// #include "backends/cpu/cpu_backend.h"' \
  > "$work/ops/check/planted.c"
printf '%s\n' '#include "common/internal.h"' > "$work/backends/opencl/planted.c"
printf '%s\n' '#include "../../../registry/internal.h"' > "$work/backends/cpu/kernels/planted.h"
mkdir -p "$work/backends/vulkan"
printf '%s\n' '#include "opreg/backend.h"' > "$work/backends/vulkan/vulkan_backend.c"
# An exception in the doc's block for an include that no file has.
python3 - "$work/docs/architecture.md" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
start = s.index("```layers")
end = s.index("```", start + 3)
s = s[:end] + "registry/keys.c -> backends/meta/meta_backend.h\n" + s[end:]
open(p, "w").write(s)
PY

if out=$(python3 "$src/tests/docs/test_layers.py" "$work"); then
  printf '%s\n' "$out"; echo "FAIL: the check passed the plants"; exit 1
fi
printf '%s\n' "$out"
printf '%s\n' "$out" | grep -qF 'ops/check/planted.c:2: includes "registry/internal.h" (registry), but ops/check may include only:'
printf '%s\n' "$out" | grep -qF 'backends/opencl/planted.c:1: includes "common/internal.h" (common), but backends/opencl may include only: include/opreg'
printf '%s\n' "$out" | grep -qF 'backends/cpu/kernels/planted.h:1: includes "../../../registry/internal.h" (registry)'
printf '%s\n' "$out" | grep -qF 'backends/vulkan: holds sources but no row'
printf '%s\n' "$out" | grep -qF 'the exception registry/keys.c -> backends/meta/meta_backend.h matches no include'
printf '%s\n' "$out" | grep -qF '5 layering problems'
echo "ok: the check names all five"
