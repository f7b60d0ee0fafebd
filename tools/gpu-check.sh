#!/usr/bin/env bash
# The CUDA backend on a machine with an NVIDIA GPU, in one go, from the
# repository root:
#   1. configure and build with -DOPREG_CUDA=ON into build-gpu/ (the
#      library, the tool and the cuda tests only);
#   2. run the tests labelled `cuda` (ctest -L cuda; test_nccl among them
#      needs libnccl.so.2, looked for under CUDA_HOME's lib folders too);
#   3. run them again under compute-sanitizer --tool memcheck;
#   4. run tests/python/test_torch_cuda.py with a python3 that has torch
#      (OPREG_TORCH_PYTHON, default python3) when the binding builds: opreg's
#      kernels on torch's current stream, opcheck and torch.compile on CUDA;
#   5. run `opreg bench --json ops --device cuda`: each memory-bound op's
#      GB/s beside a device-to-device copy measured in the same run.
# It prints a short table last and writes everything to
# build-gpu/gpu-check.txt (the table and the logs' tails) and the bench's
# JSON lines to build-gpu/bench-cuda.json. Each step runs under `timeout`,
# inside a budget of GPU_CHECK_BUDGET seconds (default 470, under 8 min).
# Needs the CUDA toolkit (nvcc; CUDA_HOME, default /usr/local/cuda), cmake,
# gcc, oneDNN and DLPack's header. A machine that reaches no package mirror
# gets the last two from deps-bundle/ (tools/deps-bundle.sh fetches it on a
# machine that does): the .deb files are unpacked into the build folder
# when the system lacks the packages, and apt is not tried. Without a
# bundle, tools/deps.sh runs first when root (bounded, 90 s).
# -DOPREG_WERROR follows GPU_CHECK_WERROR (default OFF: another machine's
# compiler may warn where ours does not; its warnings are in the build log).
# GPU_CHECK_CMAKE_ARGS adds arguments to the configure step (for example
# -DPython3_INCLUDE_DIR=... where python3 has no headers of its own).
# Exit status: 0 when every step passed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

budget=${GPU_CHECK_BUDGET:-470}
cuda_home=${CUDA_HOME:-/usr/local/cuda}
build="build-gpu"
jobs=$(nproc)
start=$SECONDS
mkdir -p "$build"
report="$build/gpu-check.txt"
: >"$report"
declare -a rows=()
status=0

log() { printf '%s\n' "$*" | tee -a "$report"; }
left() { echo $((budget - (SECONDS - start))); }
# step NAME CAP CMD...: run CMD under timeout min(CAP, what is left); record.
step() {
  local name=$1 cap=$2; shift 2
  local t; t=$(left)
  [ "$t" -gt "$cap" ] && t=$cap
  if [ "$t" -le 5 ]; then
    rows+=("$(printf '%-28s %-11s %s' "$name" "SKIPPED" "out of time")"); status=1; return 1
  fi
  local t0=$SECONDS out="$build/step-${name// /_}.log"
  log "==== $name (timeout ${t}s)"
  timeout "$t" "$@" >"$out" 2>&1
  local rc=$?
  tail -n 25 "$out" | tee -a "$report"
  local verdict=ok
  [ $rc -eq 124 ] && verdict=TIMEOUT
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && verdict="FAILED($rc)"
  rows+=("$(printf '%-28s %-11s %4ds' "$name" "$verdict" $((SECONDS - t0)))")
  [ $rc -eq 0 ] || status=1
  return $rc
}

# has_header HEADER: whether the C compiler finds it on its default path.
has_header() { printf '#include <%s>\n' "$1" | ${CC:-cc} -E -x c - >/dev/null 2>&1; }

# unpack_deb DEB DEST: a .deb's files under DEST (dpkg-deb, else ar + tar).
unpack_deb() {
  if command -v dpkg-deb >/dev/null; then dpkg-deb -x "$1" "$2"; return; fi
  local tmp rc
  tmp=$(mktemp -d)
  (cd "$tmp" && ar x "$1") && tar -xf "$tmp"/data.tar.* -C "$2"
  rc=$?
  rm -rf "$tmp"
  return $rc
}

declare -a cmake_extra=()
bundle=(deps-bundle/*.deb)
if [ -e "${bundle[0]}" ]; then
  # Offline: unpack what the system lacks; never wait on apt.
  if ! has_header oneapi/dnnl/dnnl.h || ! has_header dlpack/dlpack.h; then
    deps="$PWD/$build/deps"
    rm -rf "$deps" && mkdir -p "$deps"
    for deb in "${bundle[@]}"; do
      unpack_deb "$PWD/$deb" "$deps" || log "could not unpack $deb"
    done
    cmake_extra+=("-DCMAKE_PREFIX_PATH=$deps/usr")
    libdir=$(dirname "$(find "$deps" -name 'libdnnl.so*' | head -1)")
    export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export CPATH="$deps/usr/include${CPATH:+:$CPATH}"
    log "dependencies from deps-bundle/ (${#bundle[@]} packages) unpacked into $deps"
  fi
elif [ "$(id -u)" -eq 0 ]; then
  # Bounded: a GPU machine may reach no package mirror, and apt would wait.
  timeout 90 bash tools/deps.sh >"$build/deps.log" 2>&1 ||
    log "tools/deps.sh failed or timed out (see $build/deps.log); going on"
fi
export PATH="$cuda_home/bin:$PATH"
card=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
log "opreg gpu-check $(date -u +%Y-%m-%dT%H:%MZ) on ${card:-no nvidia-smi}, $(nvcc --version 2>/dev/null | tail -1)"

step "configure" 120 cmake -S . -B "$build" -DOPREG_CUDA=ON -DOPREG_WERROR="${GPU_CHECK_WERROR:-OFF}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CUDA_COMPILER="$cuda_home/bin/nvcc" "${cmake_extra[@]}" \
  ${GPU_CHECK_CMAKE_ARGS:-} &&
step "build" 300 cmake --build "$build" -j"$jobs" --target opreg_tool test_cuda_math \
  test_cuda_backend test_cuda_ops test_cuda_bad_inputs test_nccl
built=$?

if [ $built -eq 0 ]; then
  export OPREG_GPU_BUILD=$build
  # test_nccl opens libnccl.so.2 (as libopreg does): the toolkit's copy
  # when the loader knows none; only that folder is added.
  if ! ldconfig -p 2>/dev/null | grep 'libnccl\.so\.2 ' >/dev/null; then
    for d in "$cuda_home/lib64" "$cuda_home/lib"; do
      if [ -e "$d/libnccl.so.2" ]; then
        export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
        log "libnccl.so.2 from $d"
        break
      fi
    done
  fi
  # A skipped test means no device was seen: a failure on a GPU machine.
  # shellcheck disable=SC2016
  step "ctest -L cuda" 150 bash -c '
    ctest --test-dir "$OPREG_GPU_BUILD" -L cuda --output-on-failure -j4 |
      tee "$OPREG_GPU_BUILD/ctest-cuda.log"
    rc=${PIPESTATUS[0]}
    if grep -q "(Skipped)" "$OPREG_GPU_BUILD/ctest-cuda.log"; then
      echo "a cuda test was skipped: no CUDA device was seen (test_nccl: or no libnccl.so.2):"
      grep "(Skipped)" "$OPREG_GPU_BUILD/ctest-cuda.log"
      exit 3
    fi
    exit $rc'
  OPREG_SANITIZER=$(command -v compute-sanitizer || true)
  for c in "$cuda_home/bin/compute-sanitizer" "$cuda_home/compute-sanitizer/compute-sanitizer"; do
    [ -z "$OPREG_SANITIZER" ] && [ -x "$c" ] && OPREG_SANITIZER=$c
  done
  export OPREG_SANITIZER
  # shellcheck disable=SC2016
  step "memcheck (cuda tests)" 200 bash -c '
    [ -n "$OPREG_SANITIZER" ] || { echo "compute-sanitizer not found (CUDA_HOME?)"; exit 127; }
    rc=0
    # test_nccl last: NCCL under memcheck is the slowest to start.
    # API errors are not reported: test_cuda_backend asks for a device that
    # does not exist on purpose, and NCCL probes kernel images it lacks
    # (cudaFuncGetAttributes answering 209); memory errors still fail.
    for t in test_cuda_backend test_cuda_ops test_cuda_bad_inputs test_nccl; do
      echo "---- $t"
      "$OPREG_SANITIZER" --tool memcheck --error-exitcode 99 --leak-check no --report-api-errors no \
        "$OPREG_GPU_BUILD/tests/backends/cuda/$t" || rc=1
    done
    exit $rc'

  # opreg's CUDA kernels called from PyTorch (tests/python/test_torch_cuda.py):
  # torch's current stream, the block on CUDA, opcheck, torch.compile. Needs a
  # python3 with torch (OPREG_TORCH_PYTHON) and the binding, which needs
  # Python's headers; without either the step says so and is not counted.
  torch_py=${OPREG_TORCH_PYTHON:-python3}
  if ! "$torch_py" -c 'import torch' >/dev/null 2>&1; then
    rows+=("$(printf '%-28s %-11s %s' "torch on cuda" "not run" "no torch for $torch_py")")
  elif ! cmake --build "$build" -j"$jobs" --target opreg_python >"$build/python-build.log" 2>&1; then
    rows+=("$(printf '%-28s %-11s %s' "torch on cuda" "not run" "no binding built (Python headers?)")")
  else
    step "torch on cuda" 240 env PYTHONPATH="$build/python" PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 \
      "$torch_py" tests/python/test_torch_cuda.py
  fi

  step "bench ops --device cuda" 120 bash -c \
    "'$build/tools/opreg' bench --json ops --device cuda > '$build/bench-cuda.json'"
fi

log ""
log "==== gpu-check summary ($((SECONDS - start))s, ${card:-unknown card})"
for r in "${rows[@]}"; do log "$r"; done
if [ -s "$build/bench-cuda.json" ]; then
  log ""
  log "$(printf '%-32s %10s %8s %10s' case GB/s of_copy us/call)"
  while IFS= read -r line; do
    c=$(sed -n 's/.*"case":"\([^"]*\)".*/\1/p' <<<"$line")
    g=$(sed -n 's/.*"gb_per_s":\([0-9.]*\).*/\1/p' <<<"$line")
    o=$(sed -n 's/.*"of_copy":\([0-9.]*\).*/\1/p' <<<"$line")
    u=$(sed -n 's/.*"us_per_call":\([0-9.]*\).*/\1/p' <<<"$line")
    log "$(printf '%-32s %10s %8s %10s' "$c" "$g" "${o:--}" "${u:--}")"
  done <"$build/bench-cuda.json"
fi
log "results: $report"
exit $status
