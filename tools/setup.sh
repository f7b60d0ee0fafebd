#!/usr/bin/env bash
# The first of the README's two commands: install what is missing, build
# opreg (Release) into build/, and run the demo.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
bash tools/demo.sh build
