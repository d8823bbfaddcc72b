#!/usr/bin/env bash
# Regenerates docs/public-api.txt: every public item of the `lpmkit` library (items,
# methods, fields, variants, trait impls; auto-trait and blanket impls left out), as
# `cargo public-api` lists it, and counts its items (scripts/public-api-count.py). Commit the file with any change to the public API, so the
# change shows in review. Needs nightly Rust (rustdoc JSON) and cargo-public-api:
#   rustup toolchain install nightly --profile minimal
#   cargo install cargo-public-api --locked
set -euo pipefail
cd "$(dirname "$0")/.."
# Into a temporary file first: a failed run (no nightly, no cargo-public-api) leaves the
# committed listing as it was.
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
cargo +nightly public-api -p lpmkit -ss > "$tmp"
mv "$tmp" docs/public-api.txt
echo "docs/public-api.txt: $(wc -l < docs/public-api.txt) lines" >&2
python3 scripts/public-api-count.py docs/public-api.txt
