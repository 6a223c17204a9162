#!/usr/bin/env bash
# Writes every fuzz target's seed corpus from the real data into corpus/<target> (cargo-fuzz's
# default corpus directory; ignored by git): seed/src/main.rs says what each target gets.
#
#   ./seed.sh [OUT_DIR]        (default: corpus)
#
# The data is $TXGATE_DATA, else ../shared/data beside the checkout (see its SOURCES.md).
# Seeds are added beside what a corpus already holds; a file of the same name is rewritten.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
data="$(realpath -m "${TXGATE_DATA:-$here/../../shared/data}")"
out="$(realpath -m "${1:-$here/corpus}")"
if [ ! -d "$data" ]; then
  echo "seed.sh: no real data at $data (set TXGATE_DATA)" >&2
  exit 1
fi
cd "$here"
cargo run --quiet -p txgate-fuzz-seed -- "$data" "$out"
