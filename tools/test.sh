#!/usr/bin/env bash
# The second of the README's two commands, and what CI runs (.ci/run):
#   0. check that the sources are formatted (clang-format);
#   1. build with -Werror and run the whole CTest suite (the CUDA backend is
#      built when nvcc is found; its tests skip without a GPU);
#   2. build with ASan+UBSan and run the suite again;
#   3. build with TSan and run the tests labelled 'threads';
#      (steps 1 and 2 run the suite twice: as it is, and with the build's
#      plugins on OPREG_PLUGIN_PATH; the ASan build also runs the
#      fault-injection test);
#   4. when clang is present, run the libFuzzer targets (schema parser,
#      call path, plugin descriptor) for a bounded time each.
# Build folders: build-ci/, build-asan/, build-tsan/, build-fuzz/.
set -uo pipefail
cd "$(dirname "$0")/.."

jobs=$(nproc)
fuzz_seconds=${OPREG_FUZZ_SECONDS:-60}
start=$(date +%s)
passed=0
failed=0
status=0

step() { printf '\n==== %s (%ds)\n' "$*" $(( $(date +%s) - start )); }

# Run ctest; add its counts to the totals.
run_ctest() {
  local dir=$1; shift
  local log="$dir/ctest.log"
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local line total nfail
  line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1)
  if [ -n "$line" ]; then
    nfail=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
    total=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"$line")
    passed=$((passed + total - nfail))
    failed=$((failed + nfail))
  elif [ "$rc" -ne 0 ]; then
    failed=$((failed + 1))
  fi
  [ "$rc" -eq 0 ] || status=1
}

configure_build() {
  local dir=$1; shift
  if ! cmake -S . -B "$dir" "$@" >"$dir.configure.log" 2>&1; then
    cat "$dir.configure.log"; echo "configure of $dir failed"; status=1; failed=$((failed + 1)); return 1
  fi
  if ! cmake --build "$dir" -j"$jobs"; then
    echo "build of $dir failed"; status=1; failed=$((failed + 1)); return 1
  fi
}

step "dependencies"
bash tools/deps.sh --test || exit 1

step "PyTorch 2.15 from PyPI for the torch tests (tools/torch-env.sh; made once per machine)"
# The tests labelled 'torch' use it; made here, before the suite's clock
# runs, so that a first download does not count against a test's timeout.
if torch_py=$(bash tools/torch-env.sh); then
  echo "torch environment: $torch_py"
else
  echo "no PyTorch 2.15 environment: its tests skip when PyPI was unreachable, fail otherwise"
fi

step "formatting (clang-format, the repository's .clang-format)"
if command -v clang-format >/dev/null 2>&1; then
  files=$(git ls-files '*.c' '*.h' '*.cu' '*.cuh' 2>/dev/null || find . -path ./build\* -prune -o \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print)
  if clang-format --dry-run --Werror $files >format.log 2>&1; then
    echo "all $(echo "$files" | wc -w) files formatted"
    passed=$((passed + 1))
  else
    grep -E "^[^ ].*(warning|error):" format.log | cut -d: -f1 | sort -u | head -20
    echo "some files are not formatted: run clang-format -i on them"
    failed=$((failed + 1)); status=1
  fi
  rm -f format.log
else
  echo "clang-format not found: check skipped"
fi

step "build with -Werror, run every test"
mkdir -p build-ci
if configure_build build-ci -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOPREG_WERROR=ON; then
  run_ctest build-ci
  # The same suite with the build's plugins on the search path: every
  # default registry then loads the OpenCL plugin too, as a user's would.
  step "every test again, with OPREG_PLUGIN_PATH=build-ci/plugins"
  # (The MPI jobs load no plugin of their own and take minutes: once is enough.)
  OPREG_PLUGIN_PATH="$PWD/build-ci/plugins" run_ctest build-ci -LE mpi
fi

step "build with ASan+UBSan, run every test"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# This build also has the allocation-failure hook of the fault-injection test.
configure_build build-asan -DCMAKE_BUILD_TYPE=Debug -DOPREG_WERROR=ON \
  "-DOPREG_SANITIZE=address;undefined" -DOPREG_CUDA=OFF -DOPREG_FAULT_INJECTION=ON &&
  run_ctest build-asan

step "build with TSan, run the threading tests"
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
if configure_build build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOPREG_WERROR=ON \
     -DOPREG_SANITIZE=thread -DOPREG_CUDA=OFF; then
  if ctest --test-dir build-tsan -N -L threads | grep -q "Total Tests: [1-9]"; then
    run_ctest build-tsan -L threads
  else
    echo "no tests labelled 'threads' yet"
  fi
fi

step "fuzz the schema parser for ${fuzz_seconds}s, the call path for ${OPREG_FUZZ_CALL_SECONDS:-60}s, the plugin descriptor for ${OPREG_FUZZ_PLUGIN_SECONDS:-30}s, nested values for ${OPREG_FUZZ_VALUES_SECONDS:-30}s"
if command -v clang >/dev/null 2>&1; then
  if CC=clang configure_build build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOPREG_BUILD_TESTS=OFF \
       -DOPREG_BUILD_FUZZ=ON -DOPREG_CUDA=OFF; then
    # One check per target, TARGET:SECONDS; each time can be set from the environment.
    for run in "schema:$fuzz_seconds" "call:${OPREG_FUZZ_CALL_SECONDS:-60}" \
               "plugin_desc:${OPREG_FUZZ_PLUGIN_SECONDS:-30}" "values:${OPREG_FUZZ_VALUES_SECONDS:-30}"; do
      if bash tests/fuzz/run.sh build-fuzz "${run#*:}" "${run%%:*}"; then
        passed=$((passed + 1))
      else
        failed=$((failed + 1)); status=1
      fi
    done
  fi
else
  echo "clang not found: fuzzing skipped"
fi

step "done"
echo "total: $passed passed, $failed failed"
exit $status
