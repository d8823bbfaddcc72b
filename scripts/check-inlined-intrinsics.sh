#!/usr/bin/env bash
# Fails if a function of lpmkit in the given binaries calls a `core::arch` intrinsic out
# of line.
#
#   scripts/check-inlined-intrinsics.sh target/release/lpmkit [BINARY...]
#
# The kernels are written once over `simd::lanes` and instantiated inside
# `#[target_feature]` functions; every helper between an entry point and the intrinsics is
# `#[inline(always)]`. A helper that the compiler outlines anyway is compiled without its
# caller's target features, and each intrinsic in it becomes a function call that moves
# its vectors through the stack: the kernel still answers right, only slower (a PlanB
# node search so outlined cost its AVX2 lookup 5 %). x86-64 only; needs objdump (binutils).
# Exit 1 when such a call is found, 2 on bad use.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BINARY..." >&2; exit 2; }
command -v objdump >/dev/null || { echo "$0: objdump (binutils) is needed" >&2; exit 2; }
status=0
for bin in "$@"; do
    [ -f "$bin" ] || { echo "$0: no such binary: $bin" >&2; exit 2; }
    # Function headers are `ADDR <NAME>:`; a call to an intrinsic is `call ADDR
    # <core::core_arch::…>` (demangled), which an `<… as lpmkit::…>` impl's name does not
    # match.
    found=$(objdump -d -C --no-show-raw-insn "$bin" | awk '
        /^[0-9a-f]+ <.*>:$/ { fn = substr($0, index($0, "<")); next }
        /call +[0-9a-f]+ <core::core_arch::/ && fn ~ /lpmkit/ { print fn }' | sort | uniq -c)
    if [ -n "$found" ]; then
        echo "$bin: lpmkit functions that call intrinsics out of line (calls, function):" >&2
        echo "$found" >&2
        status=1
    else
        echo "$bin: every intrinsic inlined into lpmkit's functions"
    fi
done
exit $status
