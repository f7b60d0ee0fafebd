#!/usr/bin/env bash
# The demo: parse the vLLM op schemas and print their canonical forms and
# PyTorch's printed forms; then print the backends and the device x op
# support matrix of the catalogue, and run every op on every available
# backend (cpu, reference, and cuda or the OpenCL plugin where present),
# comparing with the reference; and, where MPI is present, a tensor-parallel
# MLP block across 2 ranks, compared with the block in one process.
# Usage: tools/demo.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
opreg="$build/tools/opreg"
# The build tree's plugins (the OpenCL backend) join the default registry.
export OPREG_PLUGIN_PATH=${OPREG_PLUGIN_PATH:-$build/plugins}

corpus="../shared/corpus/vllm.schemas"
if [ -r "$corpus" ]; then
  input=$corpus
  echo "== opreg $("$opreg" --version | cut -d' ' -f2): the vLLM schemas of $corpus"
else
  # Without the corpus, a few of the catalogue's schemas stand in.
  input=$(mktemp)
  trap 'rm -f "$input"' EXIT
  cat > "$input" <<'SCHEMAS'
rms_norm(Tensor! out, Tensor input, Tensor weight, float epsilon) -> ()
fused_add_rms_norm(Tensor! input, Tensor! residual, Tensor weight, float epsilon) -> ()
silu_and_mul(Tensor! out, Tensor input) -> ()
rotary_embedding(Tensor positions, Tensor! query, Tensor! key, int head_size, Tensor cos_sin_cache, bool is_neox) -> ()
copy_blocks(Tensor(a!)[] key_caches, Tensor[](b!) value_caches, Tensor block_mapping) -> ()
SCHEMAS
  echo "== opreg $("$opreg" --version | cut -d' ' -f2): example schemas (../shared/corpus not found)"
fi

start=$(date +%s%N)
n=$(grep -c . "$input" || true)
echo
echo "-- canonical form (parses back to an equal schema):"
"$opreg" parse --strict "$input"
echo
echo "-- PyTorch's printed form (opreg parse --torch):"
"$opreg" parse --strict --torch "$input"
end=$(date +%s%N)
echo
echo "== parsed and printed $n schemas twice in $(( (end - start) / 1000000 )) ms"

echo
echo "-- the backends (opreg devices):"
"$opreg" devices
echo
echo "-- the device x op support matrix (opreg matrix): direct, composite, fallback or -"
"$opreg" matrix --namespace _C
echo
# Every available backend but Meta (which has no data): cpu, reference, and
# cuda or a plugin's device (opencl) where they are present.
devices=$("$opreg" devices | awk 'NR > 1 && $4 == "yes" && $3 != "meta" {print $3}')
echo "-- every op on each available backend ($(echo $devices)), compared with the reference (opreg run):"
fmt="%-30s %-9s %-9s %11s %11s %-11s %11s %11s\n"
printf "$fmt" op device dtype max_abs_err max_rel_err result us/call ref_us
ok=0 unsupported=0 bad=0
for op in $("$opreg" matrix --namespace _C | awk '/^_C::/ {print $1}'); do
  for dev in $devices; do
    row=$("$opreg" run "$op" --device "$dev" --iters 5 --row 2>/dev/null) || true
    printf '%s\n' "$row"
    case $row in
      *" ok "*) ok=$((ok + 1)) ;;
      *unsupported*) unsupported=$((unsupported + 1)) ;;
      *) bad=$((bad + 1)) ;;
    esac
  done
done
echo
echo "== $ok runs within tolerance, $unsupported not supported on the device, $bad failed"

# The tensor-parallel MLP across 2 MPI ranks, where MPI is present.
if command -v mpiexec >/dev/null 2>&1 && [ -x "$build/tools/opreg_tp_mlp" ]; then
  echo
  echo "-- a tensor-parallel MLP block on 2 MPI ranks (column-parallel linear, silu_and_mul, row-parallel linear, dist::all_reduce_):"
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
    mpiexec --bind-to none -n 2 "$build/tools/opreg_tp_mlp"
else
  echo
  echo "-- (no mpiexec or no opreg_tp_mlp: the tensor-parallel demo is skipped; tools/deps.sh installs Open MPI)"
fi
