#!/usr/bin/env bash
# tools/torch-env.sh: print the python3 of a virtual environment that holds
# PyTorch 2.15 from PyPI (CPU use; its CUDA libraries come from the wheels
# below and from /usr/local/cuda), creating it the first time.
#
# The environment lives outside the checkout, in
#   ${OPREG_TORCH_ENV_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/opreg}/torch-<key>
# where <key> is a hash of the recipe below, so every clone on this machine
# shares it and a changed recipe makes a new one. It is built in a temporary
# folder and renamed into place only once `import torch` works there, under a
# lock, so concurrent callers wait for one build and an interrupted build
# leaves nothing half-made.
#
# Exit status: 0 (the interpreter's path on stdout); 3 when the download
# failed (PyPI unreachable: the callers' tests skip); 2 for anything else
# (no CPython 3.11 to base it on, a broken wheel: the callers' tests fail).
# Progress goes to stderr.
set -uo pipefail

torch_version=2.15.0
base_minor=3.11
# The recipe, one pip command per line: torch without its pinned CUDA
# dependencies, then its pure-Python dependencies, then the few CUDA
# libraries that /usr/local/cuda does not provide.
recipe="--no-deps torch==$torch_version
filelock typing-extensions setuptools>=77 sympy networkx jinja2 fsspec numpy
--no-deps nvidia-cufile nvidia-cusparselt-cu13==0.8.1 nvidia-nvshmem-cu13==3.7.2 nvidia-nccl-cu13==2.30.7"

say() { echo "torch-env: $*" >&2; }

key=$(printf '%s\n%s\n' "$base_minor" "$recipe" | sha256sum | cut -c1-12)
root=${OPREG_TORCH_ENV_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/opreg}
env=$root/torch-$torch_version-$key

ready() { [ -x "$env/bin/python3" ] && [ -e "$env/.opreg-ready" ]; }

if ready; then
  echo "$env/bin/python3"
  exit 0
fi

# A CPython 3.11 to base the environment on: pyenv's newest, else python3.11.
base=
pyroot=${PYENV_ROOT:-$HOME/.pyenv}
for d in $(ls "$pyroot/versions" 2>/dev/null | grep -E "^${base_minor//./\\.}\.[0-9]+\$" | sort -t. -k3 -n -r); do
  if [ -x "$pyroot/versions/$d/bin/python3" ]; then base=$pyroot/versions/$d/bin/python3; break; fi
done
[ -n "$base" ] || base=$(command -v "python$base_minor" 2>/dev/null || true)
if [ -z "$base" ]; then
  say "no CPython $base_minor (pyenv's or python$base_minor on PATH) to build the environment with"
  exit 2
fi

mkdir -p "$root" || exit 2
exec 9>"$root/.torch-$key.lock"
flock 9
if ready; then # built by another caller while this one waited
  echo "$env/bin/python3"
  exit 0
fi

tmp=$(mktemp -d "$root/.torch-$key.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
say "creating $env from $base (once per machine)"
"$base" -m venv "$tmp" || { say "venv failed"; exit 2; }
pip=("$tmp/bin/python3" -m pip install --quiet --disable-pip-version-check --no-input
     --timeout 30 --retries 2)
while IFS= read -r line; do
  say "pip install $line"
  # shellcheck disable=SC2086  # each line is a list of pip arguments
  if ! out=$("${pip[@]}" $line 2>&1); then
    echo "$out" | tail -5 >&2
    if grep -qiE 'connection|network|resolve|timed out|temporary failure|no matching distribution|could not find a version' <<<"$out"; then
      say "download failed ($(($(date +%s) - start)) s)"
      exit 3
    fi
    exit 2
  fi
done <<<"$recipe"
if ! "$tmp/bin/python3" -c 'import torch' >&2; then
  say "torch was installed but does not import"
  exit 2
fi
: >"$tmp/.opreg-ready"
# A venv records its own path in its scripts: rename, then mend them.
rm -rf "$env"
mv "$tmp" "$env" || exit 2
trap - EXIT
grep -rlF "$tmp" "$env/bin" 2>/dev/null | xargs -r sed -i "s|$tmp|$env|g"
say "ready in $(($(date +%s) - start)) s: $("$env/bin/python3" -c 'import torch; print("torch", torch.__version__)')"
echo "$env/bin/python3"
