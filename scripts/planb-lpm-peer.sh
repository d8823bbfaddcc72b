#!/usr/bin/env bash
# The PlanB reimplementation planb-lpm (https://github.com/esutcu/planb-lpm, C++17, MIT)
# measured beside lpmkit on the same table and the same keys. Not run by CI.
#
# usage: scripts/planb-lpm-peer.sh PLANB_LPM [TABLE]
#
#   PLANB_LPM  a planb-lpm checkout: a work tree (with include/lpm6.hpp), or a git
#              directory (a clone's .git or a bare mirror), whose HEAD is exported
#   TABLE      an IPv6 routing table lpmkit reads
#              (default: $LPMKIT_DATA/fib/ipv6-bart-tier1-prefixes.txt.xz)
#
# What it does:
#   1. builds planb-lpm's benchmark (src/main.cpp) with g++ -O3 -march=native (so its
#      AVX-512 node search is used where the CPU has AVX-512);
#   2. writes the table (`PREFIX/LEN ID`, planb-lpm's FIB format) and the keys of
#      $PATTERN (one address per line) with `lpmkit export`;
#   3. runs, $ROUNDS times in alternation, planb-lpm's benchmark on those files and
#      `lpmkit bench --pattern trace:KEYS` on the same keys, each pinned to CPU $CPU;
#   4. prints both and the ratios: each lpmkit scheme's median against planb-lpm's best
#      path (the batch size with the highest median), per round.
#
# planb-lpm keeps the first 64 bits of addresses and drops routes longer than /64; its
# answers are not checked here (lpmkit's are, against its reference trie).
#
# Environment:
#   LPMKIT      lpmkit binary (default: build target/release/lpmkit with cargo)
#   SCHEMES     lpmkit schemes (default: planb,planb-front,spider16w)
#   PATTERN     key pattern (default: v6match)          KEYS   keys (default: 4194304)
#   RUNS        lpmkit runs per figure (default: 7)     PEER_RUNS  planb-lpm runs (20)
#   ROUNDS      alternations (default: 2)               CPU    core to pin to (default: 1)
#   WRAP        a command prefix for each timed run, e.g. "flock /path/to/lock"
#   WORK        directory for the build and the files (default: a new temporary one)
#   CXX         C++ compiler (default: g++)
set -euo pipefail

if [ $# -lt 1 ] || [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 2
fi

PLANB_LPM=$1
DATA=${LPMKIT_DATA:-$(dirname "$0")/../../shared/data}
TABLE=${2:-$DATA/fib/ipv6-bart-tier1-prefixes.txt.xz}
SCHEMES=${SCHEMES:-planb,planb-front,spider16w}
PATTERN=${PATTERN:-v6match}
KEYS=${KEYS:-4194304}
RUNS=${RUNS:-7}
PEER_RUNS=${PEER_RUNS:-20}
ROUNDS=${ROUNDS:-2}
CPU=${CPU:-1}
WRAP=${WRAP:-}
CXX=${CXX:-g++}
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$(mktemp -d -t planb-lpm-peer.XXXXXX)}
mkdir -p "$WORK"

die() { echo "planb-lpm-peer: $*" >&2; exit 2; }
[ -e "$TABLE" ] || die "no table $TABLE (give TABLE or set LPMKIT_DATA)"

# 1. planb-lpm's sources and its benchmark.
if [ -f "$PLANB_LPM/include/lpm6.hpp" ]; then
    SRC=$PLANB_LPM
else
    git --git-dir="$PLANB_LPM" rev-parse --verify -q HEAD >/dev/null \
        || die "$PLANB_LPM is neither a planb-lpm work tree nor a git directory"
    SRC=$WORK/planb-lpm
    rm -rf "$SRC" && mkdir -p "$SRC"
    git --git-dir="$PLANB_LPM" archive HEAD | tar x -C "$SRC"
    echo "# planb-lpm $(git --git-dir="$PLANB_LPM" rev-parse --short HEAD), exported to $SRC"
fi
[ -f "$SRC/src/main.cpp" ] || die "$SRC has no src/main.cpp"
PEER=$WORK/planb-lpm-bench
"$CXX" -O3 -std=c++17 -march=native -I"$SRC/include" -I"$SRC/src" -o "$PEER" "$SRC/src/main.cpp" \
    || die "building planb-lpm failed"
echo "# built $PEER: $CXX -O3 -std=c++17 -march=native ($("$CXX" --version | head -1))"
# (The macros are captured first: `grep -q` closing the pipe early would fail the pipeline.)
defs=$("$CXX" -march=native -dM -E -x c++ /dev/null)
if [[ $defs == *__AVX512F__* && $defs == *__AVX512DQ__* ]]; then
    echo "#   -march=native enables AVX-512 here: planb-lpm uses its AVX-512 node search"
else
    echo "#   no AVX-512 with -march=native here: planb-lpm uses its scalar node search"
fi

# 2. lpmkit, the table and the keys.
if [ -z "${LPMKIT:-}" ]; then
    (cd "$REPO" && cargo build --release -q)
    LPMKIT=$REPO/target/release/lpmkit
fi
"$LPMKIT" export -t "$TABLE" --routes-out "$WORK/fib.txt" \
    --keys-out "$WORK/keys.txt" --pattern "$PATTERN" --keys "$KEYS"
echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), pinned to core $CPU"

# 3. Alternating rounds.
summary=()
for round in $(seq 1 "$ROUNDS"); do
    echo
    echo "## round $round: planb-lpm"
    $WRAP taskset -c "$CPU" "$PEER" "$WORK/fib.txt" "$WORK/keys.txt" "$PEER_RUNS" \
        | tee "$WORK/peer.$round.txt"
    echo
    echo "## round $round: lpmkit"
    $WRAP taskset -c "$CPU" "$LPMKIT" bench -t "$TABLE" -s "$SCHEMES" \
        --pattern "trace:$WORK/keys.txt" --keys "$KEYS" --runs "$RUNS" --warmup 1 \
        | tee "$WORK/lpmkit.$round.txt"
    # planb-lpm's best path: the batch<M> row with the highest median.
    best=$(awk '$1 ~ /^batch</ { for (i = 1; i < NF; i++) if ($i == "med") m = $(i + 1);
                                 if (m > b) { b = m; l = $1 } }
                END { printf "%s %s", l, b }' "$WORK/peer.$round.txt")
    label=${best% *}
    peer=${best#* }
    [ -n "$peer" ] || die "no batch rows in planb-lpm's output"
    line="round $round: planb-lpm $label $peer Mlps;"
    while read -r name _ _ mlps _; do
        line="$line $name $mlps Mlps = $(awk -v a="$mlps" -v b="$peer" 'BEGIN { printf "%.2fx", a / b }');"
    done < <(awk 'f && NF > 4 { print } /^scheme / { f = 1 }' "$WORK/lpmkit.$round.txt")
    summary+=("$line")
done

echo
echo "## lpmkit against planb-lpm's best path, same keys ($PATTERN, $KEYS keys, $(basename "$TABLE"))"
printf '%s\n' "${summary[@]}"
echo "# files in $WORK"
