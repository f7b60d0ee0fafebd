#!/bin/sh
# run.sh VERSION|system|torch PACKAGE_DIR TEST.py
# Runs TEST.py with the CPython of VERSION (e.g. 3.8: pyenv's newest 3.8.x,
# else python3.8 on PATH), the system's /usr/bin/python3, or (torch) the
# virtual environment with PyTorch 2.15 from PyPI that tools/torch-env.sh
# makes once per machine, with the built package on PYTHONPATH. Exits 77
# (skip) when that interpreter is absent, or when PyPI could not be reached
# to make the torch environment; any other failure to make it fails.
# numpy is a test-time helper: when the interpreter lacks it, it is
# installed from PyPI with pip, best effort (OPREG_TEST_PIP=0 turns that
# off); without it the tests use a DLPack object of their own.
version=$1
pkg=$2
test=$3
py=
if [ "$version" = torch ]; then
  env_sh=$(dirname "$0")/../../tools/torch-env.sh
  py=$(bash "$env_sh")
  rc=$?
  if [ "$rc" -eq 3 ]; then
    echo "skip: PyTorch 2.15 could not be downloaded from PyPI (tools/torch-env.sh)"
    exit 77
  fi
  if [ "$rc" -ne 0 ]; then
    echo "tools/torch-env.sh failed ($rc): no PyTorch 2.15 environment"
    exit 1
  fi
elif [ "$version" = system ]; then
  for c in /usr/bin/python3 python3; do
    if command -v "$c" >/dev/null 2>&1; then py=$(command -v "$c"); break; fi
  done
else
  root=${PYENV_ROOT:-$HOME/.pyenv}
  for d in $(ls "$root/versions" 2>/dev/null | grep -E "^$version\.[0-9]+\$" | sort -t. -k3 -n -r); do
    if [ -x "$root/versions/$d/bin/python3" ]; then py=$root/versions/$d/bin/python3; break; fi
  done
  if [ -z "$py" ] && command -v "python$version" >/dev/null 2>&1; then
    py=$(command -v "python$version")
  fi
fi
if [ -z "$py" ]; then
  echo "skip: no CPython $version here"
  exit 77
fi
echo "interpreter: $py ($("$py" -c 'import sys; print(sys.version.split()[0])'))"
# A failed pip run (no network) is remembered in the build tree, so the other
# interpreters' tests do not wait for it again.
nopip=$pkg/.pip-failed
if [ "${OPREG_TEST_PIP:-1}" != 0 ] && [ "$version" != system ] && [ "$version" != torch ] && [ ! -e "$nopip" ] &&
   ! "$py" -c 'import numpy' >/dev/null 2>&1; then
  echo "numpy is missing: installing it with pip (best effort)"
  if ! timeout 180 "$py" -m pip install --quiet --disable-pip-version-check --no-input \
       --timeout 15 --retries 1 numpy >/dev/null 2>&1; then
    echo "pip could not install numpy: testing without it"
    : >"$nopip" 2>/dev/null
  fi
fi
PYTHONPATH=$pkg PYTHONDONTWRITEBYTECODE=1 exec "$py" "$test"
