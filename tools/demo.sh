#!/usr/bin/env bash
# The demo: parse the vLLM op schemas and print their canonical forms and
# PyTorch's printed forms. Usage: tools/demo.sh [BUILD_DIR]
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
