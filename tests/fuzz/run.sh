#!/usr/bin/env bash
# Run one libFuzzer target for a bounded time.
# Usage: tests/fuzz/run.sh BUILD_DIR SECONDS [TARGET]
#   TARGET: schema (the default), call, plugin_desc or values: the
#   executable BUILD_DIR/tests/fuzz/fuzz_TARGET.
# Each target keeps the corpus it grows and its artifacts (crash-*, leak-*,
# timeout-*, oom-*) in folders of its own under BUILD_DIR:
#   schema       fuzz-corpus/, fuzz-seeds/, artifacts in BUILD_DIR/ itself
#   call         fuzz-call/corpus/, fuzz-call/seeds/, artifacts in fuzz-call/
#   plugin_desc  fuzz-plugin_desc/corpus/, .../seeds/, artifacts in fuzz-plugin_desc/
#   values       fuzz-values/corpus/, .../seeds/, artifacts in fuzz-values/
# Seeds: schema, one file per line of every schema file in ../shared/corpus;
# call, one valid call of each op, written by the target itself
# (OPREG_FUZZ_WRITE_SEEDS); plugin_desc and values, the inputs below.
# Prints the number of executions and of crashes; exits 1 when there was any.
# Logs: BUILD_DIR/fuzz.log (schema), BUILD_DIR/fuzz-TARGET.log.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
build=$1
seconds=${2:-60}
name=${3:-schema}
target="$build/tests/fuzz/fuzz_$name"
[ -x "$target" ] || { echo "fuzz target $target not built"; exit 1; }

case $name in
  schema)
    seeds="$build/fuzz-seeds"
    grown="$build/fuzz-corpus"
    artifacts="$build/"
    max_len=2048
    ;;
  call | plugin_desc | values)
    seeds="$build/fuzz-$name/seeds"
    grown="$build/fuzz-$name/corpus"
    artifacts="$build/fuzz-$name/"
    max_len=$([ "$name" = call ] && echo 4096 || echo 1024)
    ;;
  *)
    echo "unknown fuzz target '$name' (schema, call, plugin_desc or values)"
    exit 2
    ;;
esac
mkdir -p "$seeds" "$grown" "$artifacts"

# The call seeds name ops by their index in this build's registry: written anew.
if [ "$name" = call ]; then
  rm -f "$seeds"/seed-*
  env -u OPREG_PLUGIN_PATH OPREG_FUZZ_WRITE_SEEDS="$seeds" "$target" >/dev/null 2>&1 ||
    { echo "fuzz_call could not write its seeds"; exit 1; }
fi

if [ -z "$(ls -A "$seeds")" ]; then
  case $name in
    schema)
      if [ -d ../shared/corpus ]; then
        cat ../shared/corpus/*.schemas | awk -v dir="$seeds" '{ f = sprintf("%s/s%05d", dir, NR); printf "%s", $0 > f; close(f) }'
        # The edge cases are JSON-quoted: their raw text still makes useful seeds.
        cut -f1 ../shared/corpus/edge_cases.oracle-1.13.tsv | awk -v dir="$seeds" '{ f = sprintf("%s/e%05d", dir, NR); printf "%s", $0 > f; close(f) }'
      fi
      ;;
    plugin_desc)
      # The input format is in fuzz_plugin_desc.c. A plugin with a backend
      # whose init defines an op, implements it and replaces base::twice,
      # then unloaded and reclaimed:
      printf '\x02\x00\x00\x00\x00\x00\x00\x64\x09\x00\x00\x00\x00\x2d\x00\x05\x00\x00\x00\x02\x00\x00\x03\x00\x00\x02\x01\x00\x00\x03\x01\x01\x62\x00\xa0\x00\xc8' >"$seeds/backend-unload"
      # An init that registers, then fails:
      printf '\x00\x00\x00\x00\x00\x01\x00\x64\x09\x00\x00\x01\x00\x01\x00\x03\x00\x00\x00\x02\x00\x00\x04\x00\x00\x02\xa1' >"$seeds/init-fails"
      # A plugin of a later major version:
      printf '\x00\x00\x00\x00\xc2\x02\x00\x00\x09' >"$seeds/future-major"
      ;;
    values)
      # The input format is in fuzz_values.c. A call that matches every type:
      # str[] ["ab"], int[][] [[1]], int?[] [None], ("x", None, [1.0]), Any 7,
      # Scalar[] [1], name None:
      printf '\x0c\x01\x01\x02ab\x0d\x01\x07\x01\x01\x0d\x01\x00\x0e\x03\x06\x01\x01x\x00\x08\x01\x03\x03\x87\x0d\x01\x03\x01\x00' >"$seeds/all-match"
      # Lists of lists, nested deep in the Any:
      printf '\x0d\x01\x0d\x01\x0d\x01\x0d\x01\x0d\x01\x0c\x02\x01\x03abc\x00' >"$seeds/nested"
      ;;
  esac
fi

log="$build/fuzz-$name.log"
[ "$name" = schema ] && log="$build/fuzz.log"
# A crash ends a libFuzzer run: start it again, with the corpus grown so far,
# until the time is spent, so that a known defect does not cut the fuzzing
# short. Each crash leaves an artifact and counts once.
start=$(date +%s)
execs=0
crashes=0
status=0
: >"$log"
while :; do
  left=$((seconds - ($(date +%s) - start)))
  [ "$left" -gt 0 ] || break
  # The default registry would load the plugins of OPREG_PLUGIN_PATH: not here.
  env -u OPREG_PLUGIN_PATH "$target" "$grown" "$seeds" -max_total_time="$left" -timeout=10 \
    -rss_limit_mb=2048 -max_len="$max_len" -print_final_stats=1 -artifact_prefix="$artifacts" \
    >"$log.run" 2>&1
  rc=$?
  cat "$log.run" >>"$log"
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log.run" | tail -1)
  execs=$((execs + ${runs:-0}))
  [ "$rc" -eq 0 ] && break
  status=1
  crashes=$((crashes + 1))
  # What it was, in one line.
  grep -m1 -E "invariant violated|runtime error|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)" "$log.run" |
    sed 's/^/  crash: /'
  [ -n "$runs" ] || { echo "  the target died without its statistics:"; tail -20 "$log.run"; break; }
done
rm -f "$log.run"
echo "stat::number_of_executed_units: $execs"
awk '/^stat::new_units_added:/ { n += $2 } /^stat::peak_rss_mb:/ { if ($2 > m) m = $2 }
     END { printf "stat::new_units_added: %d\nstat::peak_rss_mb: %d\n", n, m }' "$log"
echo "fuzz $name: ${seconds}s, $execs executions, $crashes crashes (artifacts in $artifacts)"
exit $status
