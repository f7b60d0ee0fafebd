#!/usr/bin/env bash
# Install the Debian packages opreg needs that are missing (run as root).
# Only packages not yet installed are fetched, so a ready machine costs nothing.
#   tools/deps.sh          what building and running opreg needs (the README's
#                          first command: the library, the tool, the Python
#                          binding, the OpenCL plugin, the demo);
#   tools/deps.sh --test   that, and what only the tests need (the second
#                          command: sanitizer and fuzzing runtimes, the
#                          formatting check, the API reference, numpy and
#                          PyTorch for the binding's tests).
set -euo pipefail

packages=(
  gcc g++ make cmake pkg-config python3   # build tools
  libdlpack-dev                            # DLPack's DLTensor, opreg's tensor
  libdnnl-dev                              # oneDNN, for the CPU matmul kernels
  python3-dev                              # Python headers: the binding (python/)
  pocl-opencl-icd ocl-icd-opencl-dev opencl-c-headers  # the OpenCL backend plugin, run on the CPU
  libopenmpi-dev openmpi-bin               # Open MPI: the CPU process groups (libopreg_mpi) and mpiexec
)
if [ "${1:-}" = "--test" ]; then
  packages+=(
    doxygen                                # the C API reference and its check (tests/docs)
    clang libclang-rt-14-dev               # the libFuzzer targets
    clang-format                           # the formatting check
    python3-numpy python3-torch            # DLPack tensors of the binding's tests
    python3-venv                           # the PyTorch 2.15 environment (tools/torch-env.sh)
  )
elif [ -n "${1:-}" ]; then
  echo "usage: tools/deps.sh [--test]" >&2
  exit 2
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "opreg: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "opreg: missing packages, and not root: run 'apt-get install -y ${missing[*]}'" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
