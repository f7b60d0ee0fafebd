#!/bin/sh
# §5 of docs/plugins.md: install opreg into a fresh prefix, build the
# out-of-tree example plugin (docs/examples/plugin) there with
# find_package(opreg), check that it imports no opreg_ symbol, and load it.
#   example_test.sh BUILD_DIR WORK_DIR LIBDIR C_COMPILER
set -eu
build=$1 work=$2 libdir_rel=$3 cc=$4
here=$(cd "$(dirname "$0")" && pwd)
example=$here/../../../docs/examples/plugin
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 || {
  cat "$work/install.log"; echo "FAIL: cmake --install"; exit 1; }
if [ ! -f "$prefix/$libdir_rel/cmake/opreg/opregConfig.cmake" ]; then
  echo "skipped: this build installs no CMake package (opregConfig.cmake)"
  exit 77
fi
cmake -S "$example" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
  >"$work/build.log" 2>&1 && cmake --build "$work/build" >>"$work/build.log" 2>&1 || {
  cat "$work/build.log"; echo "FAIL: building the example"; exit 1; }
plugin=$work/build/example_plugin.so
if nm -D --undefined-only "$plugin" | grep opreg_; then
  echo "FAIL: the example plugin imports opreg symbols"; exit 1
fi
LD_LIBRARY_PATH=$prefix/$libdir_rel "$work/build/run_example" "$plugin"
# Installed into opreg's plugin folder, the installed tool finds it by itself.
cmake --install "$work/build" >>"$work/build.log" 2>&1
if [ -x "$prefix/bin/opreg" ]; then
  LD_LIBRARY_PATH=$prefix/$libdir_rel "$prefix/bin/opreg" plugins | grep -E '^loaded +example '
fi
echo "example plugin: ok"
