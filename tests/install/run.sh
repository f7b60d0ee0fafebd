#!/bin/sh
# Install opreg into a fresh prefix, check the layout, then build and run a
# consumer (consumer/) through the CMake package and through pkg-config,
# against the shared and the static library, and a C++ one (consumer_cxx/)
# through the CMake package.
#   run.sh BUILD_DIR WORK_DIR LIBDIR INCLUDEDIR C_COMPILER VERSION
set -eu
build=$1 work=$2 libdir_rel=$3 incdir_rel=$4 cc=$5 version=$6
here=$(cd "$(dirname "$0")" && pwd)
major=${version%%.*}

fail() { echo "FAIL: $*" >&2; exit 1; }
# The libopreg.so that program $1 loads, as a real path ("" for none).
loaded_lib() {
  lib=$(ldd "$1" | sed -n 's/.*libopreg\.so[.0-9]* => \([^ ]*\).*/\1/p')
  if [ -n "$lib" ]; then readlink -f "$lib"; fi
}
step() { echo "-- $*"; }

rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
libdir=$prefix/$libdir_rel

step "cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; fail "install"; }

step "layout"
for h in "$here"/../../include/opreg/*.h; do
  test -f "$prefix/$incdir_rel/opreg/$(basename "$h")" || fail "header $(basename "$h") not installed"
done
test -f "$libdir/libopreg.so.$version" || fail "no $libdir_rel/libopreg.so.$version"
test -L "$libdir/libopreg.so.$major" || fail "no link libopreg.so.$major"
test -L "$libdir/libopreg.so" || fail "no link libopreg.so"
test -f "$libdir/libopreg.a" || fail "no $libdir_rel/libopreg.a"
soname=$(readelf -d "$libdir/libopreg.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
test "$soname" = "libopreg.so.$major" || fail "SONAME is '$soname', want libopreg.so.$major"
test -d "$libdir/opreg/plugins" || fail "no plugin folder $libdir_rel/opreg/plugins"
for f in opregConfig.cmake opregConfigVersion.cmake opregTargets.cmake; do
  test -f "$libdir/cmake/opreg/$f" || fail "no $libdir_rel/cmake/opreg/$f"
done
test -f "$libdir/pkgconfig/opreg.pc" || fail "no $libdir_rel/pkgconfig/opreg.pc"
# The installed tool finds the installed library (its RPATH is relative).
"$prefix/bin/opreg" devices >"$work/devices.txt" || fail "installed bin/opreg devices failed"
installed_lib=$(readlink -f "$libdir/libopreg.so.$major")
test "$(loaded_lib "$prefix/bin/opreg")" = "$installed_lib" || fail "bin/opreg does not load the installed library"
echo "   headers, libopreg.so.$version (SONAME $soname), libopreg.a, bin/opreg, plugins/, package files"

step "find_package(opreg): build the consumer"
cmake -S "$here/consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_COMPILER="$cc" >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "configure"; }
cmake --build "$work/cmake" >>"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "build"; }
test "$(cat "$work/cmake/version.txt")" = "$version" || fail "opreg_VERSION is $(cat "$work/cmake/version.txt")"
test "$(loaded_lib "$work/cmake/consumer_shared")" = "$installed_lib" || fail "consumer_shared does not load the installed libopreg"
test -z "$(loaded_lib "$work/cmake/consumer_static")" || fail "consumer_static loads libopreg.so"
"$work/cmake/consumer_shared" "$version" || fail "consumer_shared"
"$work/cmake/consumer_static" "$version" || fail "consumer_static"

step "find_package(opreg) from a C++ project"
if command -v c++ >/dev/null 2>&1; then
  cmake -S "$here/consumer_cxx" -B "$work/cmake_cxx" -DCMAKE_PREFIX_PATH="$prefix" \
    >"$work/cmake_cxx.log" 2>&1 || { cat "$work/cmake_cxx.log"; fail "configure (C++)"; }
  cmake --build "$work/cmake_cxx" >>"$work/cmake_cxx.log" 2>&1 || { cat "$work/cmake_cxx.log"; fail "build (C++)"; }
  "$work/cmake_cxx/consumer_cxx_shared" "$version" || fail "consumer_cxx_shared"
  "$work/cmake_cxx/consumer_cxx_static" "$version" || fail "consumer_cxx_static"
else
  echo "   no C++ compiler: skipped"
fi

step "pkg-config opreg: build the consumer"
PKG_CONFIG_PATH=$libdir/pkgconfig
export PKG_CONFIG_PATH
test "$(pkg-config --modversion opreg)" = "$version" || fail "pkg-config --modversion is $(pkg-config --modversion opreg)"
test -d "$(pkg-config --variable=plugindir opreg)" || fail "plugindir $(pkg-config --variable=plugindir opreg) is not a folder"
# shellcheck disable=SC2046
$cc -std=c11 -o "$work/pc_shared" "$here/consumer/consumer.c" $(pkg-config --cflags --libs opreg) -lm \
  -Wl,-rpath,"$libdir" || fail "build with pkg-config --libs"
# The static library alone: its Libs.private must be complete. -fno-lto as
# in consumer/CMakeLists.txt.
# shellcheck disable=SC2046
$cc -std=c11 -fno-lto -o "$work/pc_static" "$here/consumer/consumer.c" $(pkg-config --cflags opreg) \
  $(pkg-config --static --libs opreg | sed 's/-lopreg\b/-l:libopreg.a/') -lm || fail "build with pkg-config --static --libs"
test "$(loaded_lib "$work/pc_shared")" = "$installed_lib" || fail "pc_shared does not load the installed libopreg"
test -z "$(loaded_lib "$work/pc_static")" || fail "pc_static loads libopreg.so"
"$work/pc_shared" "$version" || fail "pc_shared"
"$work/pc_static" "$version" || fail "pc_static"
echo "install test: ok"
