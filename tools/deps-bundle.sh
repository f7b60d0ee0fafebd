#!/usr/bin/env bash
# Fetch the Debian packages that a build of opreg cannot do without (oneDNN
# and its OpenCL loader, DLPack's header) as .deb files into DIR (default
# deps-bundle/ in the repository root), for a machine that reaches no
# package mirror: tools/gpu-check.sh unpacks them there, into its build
# folder, when the system lacks them, and then does not try apt at all.
# Run it where apt works (any user: apt-get download needs no root). The
# folder is ignored by git; copy it along with the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${1:-deps-bundle}
packages=(libdnnl2 libdnnl-dev libdlpack-dev ocl-icd-libopencl1)

mkdir -p "$dir"
rm -f "$dir"/*.deb
# apt-get download writes into the current folder; as root it warns that
# the _apt user cannot write there, which is harmless.
(cd "$dir" && apt-get download "${packages[@]}" 2>&1) |
  { grep -v '^W: Download is performed unsandboxed' || true; }
echo "opreg: $(find "$dir" -name "*.deb" | wc -l) packages in $dir ($(du -sh "$dir" | cut -f1)):"
ls -1 "$dir"
