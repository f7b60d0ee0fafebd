#!/usr/bin/env bash
# The demo: parse the vLLM op schemas and print their canonical forms and
# PyTorch's printed forms; then print the backends and the device x op
# support matrix of the catalogue, and run every op on every backend that
# can run it from the tool (cpu, reference), comparing with the reference.
# Usage: tools/demo.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
opreg="$build/tools/opreg"

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
echo "-- every op on cpu and on the Reference key, compared with the reference (opreg run):"
# Meta has no data and CUDA inputs are not built by the tool: cpu and
# reference are the backends that run here.
fmt="%-30s %-9s %-9s %11s %11s %-11s %11s %11s\n"
printf "$fmt" op device dtype max_abs_err max_rel_err result us/call ref_us
ok=0 unsupported=0 bad=0
for op in $("$opreg" matrix --namespace _C | awk '/^_C::/ {print $1}'); do
  for dev in cpu reference; do
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
