#!/usr/bin/env bash
# Regenerates docs/public-api.txt: every public item of the `lpmkit` library (items,
# methods, fields, variants, trait impls; auto-trait and blanket impls left out), as
# `cargo public-api` lists it, and counts its items (scripts/public-api-count.py). Commit
# the file with any change to the public API, so the change shows in review.
#
#   scripts/public-api.sh           regenerate docs/public-api.txt
#   scripts/public-api.sh --check   compare it with the library (CI): exit 1 if it is stale
#
# Needs the nightly Rust named below (rustdoc JSON) and cargo-public-api; `--check` installs
# both when they are missing:
#   rustup toolchain install nightly-2026-10-29 --profile minimal
#   cargo install cargo-public-api --version 0.52.0 --locked --debug
# The nightly is pinned: rustdoc's rendering of the same items changes between nightlies
# (e.g. a derived `clone` returning `Self` or the type's path), and the listing must change
# only when the library does. Move both versions together, and regenerate the file.
# Exit 3 when the listing cannot be made (the nightly cannot be installed, or its rustdoc
# JSON is of a format this cargo-public-api does not read), so a caller can tell that from
# a stale file.
set -euo pipefail
cd "$(dirname "$0")/.."
NIGHTLY=nightly-2026-10-29
CARGO_PUBLIC_API_VERSION=0.52.0
check=0
case "${1:-}" in
    --check) check=1 ;;
    "") ;;
    *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac
if ! cargo "+$NIGHTLY" --version >/dev/null 2>&1; then
    rustup toolchain install "$NIGHTLY" --profile minimal >&2 \
        || { echo "public-api: cannot install Rust $NIGHTLY" >&2; exit 3; }
fi
if ! cargo public-api --version >/dev/null 2>&1; then
    if [ "$check" = 1 ]; then
        # A debug build: it compiles in a fraction of a release build's time, and listing
        # one crate is quick either way.
        cargo install cargo-public-api --version "$CARGO_PUBLIC_API_VERSION" --locked --debug >&2 \
            || { echo "public-api: cannot install cargo-public-api" >&2; exit 3; }
    else
        echo "public-api: cargo-public-api is not installed (see the comment at the top)" >&2
        exit 3
    fi
fi
# Into a temporary file first: a failed run leaves the committed listing as it was.
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
if ! cargo "+$NIGHTLY" public-api -p lpmkit -ss > "$tmp"; then
    echo "public-api: cargo public-api could not list the library ($NIGHTLY's" \
        "rustdoc JSON is of a format cargo-public-api $(cargo public-api --version 2>/dev/null |
        awk '{print $2}') does not read)" >&2
    exit 3
fi
if [ "$check" = 1 ]; then
    if diff -u docs/public-api.txt "$tmp"; then
        echo "docs/public-api.txt matches the library: $(python3 scripts/public-api-count.py "$tmp" 2>&1 | tail -n 1)" >&2
        exit 0
    fi
    echo "public-api: docs/public-api.txt is stale (the diff above: - listed, + in the library);" \
        "run scripts/public-api.sh and commit the file" >&2
    exit 1
fi
mv "$tmp" docs/public-api.txt
trap - EXIT
echo "docs/public-api.txt: $(wc -l < docs/public-api.txt) lines" >&2
python3 scripts/public-api-count.py docs/public-api.txt
