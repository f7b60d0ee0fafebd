#!/bin/sh
# tools/check_api_docs.py must fail on a copy of the headers with one
# function's comment removed, one status code's block removed, and one
# status code appended without a block; and name all three.
#   check_catches.sh SOURCE_DIR WORK_DIR
set -eu
src=$1 work=$2
rm -rf "$work"
mkdir -p "$work/opreg"
cp "$src"/include/opreg/*.h "$work/opreg/"
h=$work/opreg/common.h
grep -q '^/// Forget the last error' "$h"
grep -q '^/// @var OPREG_ERR_IO$' "$h"
sed -i -e '/^\/\/\/ Forget the last error/d' -e '/^\/\/\/ @var OPREG_ERR_IO$/,+1d' \
  -e 's|^\(    X(OPREG_ERR_INTERNAL, 18, "internal error")\)|\1 \\\n    X(OPREG_ERR_APPENDED, 99, "appended")|' "$h"
if out=$(python3 "$src/tools/check_api_docs.py" "$work"); then
  printf '%s\n' "$out"; echo "FAIL: the check passed undocumented items"; exit 1
fi
printf '%s\n' "$out"
printf '%s\n' "$out" | grep -q 'opreg_clear_error is not documented'
printf '%s\n' "$out" | grep -q 'status OPREG_ERR_IO (17) is not documented'
printf '%s\n' "$out" | grep -q 'status OPREG_ERR_APPENDED (99) is not documented'
printf '%s\n' "$out" | grep -q '3 undocumented'
echo "ok: the check names all three"
