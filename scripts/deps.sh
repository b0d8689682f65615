#!/usr/bin/env bash
# deps.sh installs the Debian packages that `make test` needs (and `make demo`'s sandbox), once.
#
# As root it apt-installs whatever is missing; as another user it prints the one `sudo apt-get install`
# line to run and exits 1. Nothing is installed when everything is present, so it costs a dpkg query.
# `make test` and `.ci/run` both call it; `scripts/deps.sh --print` lists the packages and installs nothing.
set -euo pipefail

# bubblewrap: the sandbox's first isolation layer; python3-numpy/scipy/sympy/torch: the trainer, the
# programs' optional imports and the reference checks; libopenblas-dev/liblapacke-dev: Vendi and LSA;
# chromium: the report test; jupyter-nbconvert/ipykernel/matplotlib/sklearn/pandas: the notebooks;
# python3-jinja2/regex: chat templates and the Qwen3 tokenizer (internal/chattemplate); curl: fetching it;
# zsh/fish: the completion scripts' test; slurm-wlm/munge: the Slurm the executor's tests start on
# loopback (internal/slurmtest).
packages=(bubblewrap python3 python3-numpy python3-scipy python3-sympy python3-torch libopenblas-dev
          liblapacke-dev chromium jupyter-nbconvert python3-ipykernel python3-matplotlib python3-sklearn
          python3-pandas python3-jinja2 python3-regex curl ca-certificates zsh fish slurm-wlm munge)

if [ "${1:-}" = "--print" ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

if ! command -v dpkg >/dev/null 2>&1; then
  echo "deps.sh: no dpkg here (not Debian): install the equivalents of: ${packages[*]}" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "deps.sh: missing Debian packages; install them, then run make again:" >&2
  echo "  sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi

echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
