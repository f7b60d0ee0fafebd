#!/usr/bin/env bash
# Run the schema parser's fuzz target for a bounded time.
# Usage: tests/fuzz/run.sh BUILD_DIR SECONDS
# Seeds: one file per line of every schema file in ../shared/corpus (made in
# BUILD_DIR at run time), plus the corpus libFuzzer grew in earlier runs.
set -uo pipefail
cd "$(dirname "$0")/../.."
build=$1
seconds=${2:-60}
target="$build/tests/fuzz/fuzz_schema"
[ -x "$target" ] || { echo "fuzz target $target not built"; exit 1; }

seeds="$build/fuzz-seeds"
grown="$build/fuzz-corpus"
mkdir -p "$seeds" "$grown"
if [ -d ../shared/corpus ] && [ -z "$(ls -A "$seeds")" ]; then
  cat ../shared/corpus/*.schemas | awk -v dir="$seeds" '{ f = sprintf("%s/s%05d", dir, NR); printf "%s", $0 > f; close(f) }'
  # The edge cases are JSON-quoted: their raw text still makes useful seeds.
  cut -f1 ../shared/corpus/edge_cases.oracle-1.13.tsv | awk -v dir="$seeds" '{ f = sprintf("%s/e%05d", dir, NR); printf "%s", $0 > f; close(f) }'
fi

log="$build/fuzz.log"
"$target" "$grown" "$seeds" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -max_len=2048 -print_final_stats=1 -artifact_prefix="$build/" >"$log" 2>&1
rc=$?
grep -E "^(stat::number_of_executed_units|stat::new_units_added|stat::peak_rss_mb)|Done [0-9]+ runs|ERROR|SUMMARY" "$log"
crashes=$(ls "$build"/crash-* "$build"/leak-* "$build"/timeout-* "$build"/oom-* 2>/dev/null | wc -l)
echo "fuzz: exit $rc, $crashes crash/leak/timeout artifacts"
if [ "$rc" -ne 0 ]; then
  tail -40 "$log"
  exit 1
fi
