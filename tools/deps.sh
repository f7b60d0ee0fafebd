#!/usr/bin/env bash
# Install the Debian packages opreg needs that are missing (run as root).
# Only packages not yet installed are fetched, so a ready machine costs nothing.
set -euo pipefail

packages=(
  gcc g++ make cmake pkg-config python3   # build and test tools
  doxygen                                  # the C API reference and its check (tests/docs)
  clang libclang-rt-14-dev                 # the libFuzzer target of the parser
  clang-format                             # the formatting check
  libdlpack-dev                            # DLPack's DLTensor, opreg's tensor
  libdnnl-dev                              # oneDNN, for the CPU matmul kernels
  python3-dev                              # Python headers: the binding (python/)
  python3-numpy python3-torch              # DLPack tensors of the binding's tests
  pocl-opencl-icd ocl-icd-opencl-dev opencl-c-headers  # the OpenCL backend plugin, run on the CPU
)

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
