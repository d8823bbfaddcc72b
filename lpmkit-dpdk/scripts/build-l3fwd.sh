#!/bin/sh
# Builds DPDK's l3fwd example into DIR, as the l3fwd tests and the forwarding-rate
# measurement run it: `build-l3fwd.sh DIR` prints the binary's path (DIR/l3fwd/build/l3fwd).
#
# The sources are the installed DPDK's (Debian's dpdk-doc: /usr/share/dpdk/examples, or
# DPDK_EXAMPLES), built with `make` against `pkg-config libdpdk`. Three constants of the
# copy are changed, none on the lookup path:
#   * main.c asks every port for RX checksum offload, which DPDK's virtual devices
#     (net_pcap, net_af_packet, net_null) lack, so the port would not start: no offload;
#   * l3fwd_fib.c sizes both FIBs for 65,536 routes (max_routes) and the IPv6 one for
#     32,768 tbl8 groups: 1,048,576 routes and 262,144 groups, so that DPDK's own
#     librte_fib holds the full tables it is compared on (lpmkit needs no tbl8 groups; it
#     honours max_routes as DPDK does).
set -eu
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
src="${DPDK_EXAMPLES:-/usr/share/dpdk/examples}"
out="$1"
[ -d "$src/l3fwd" ] && [ -d "$src/common" ] || {
    echo "$0: no l3fwd sources in $src (Debian: apt install dpdk-doc)" >&2
    exit 1
}
rm -rf "$out/l3fwd" "$out/common"
mkdir -p "$out"
cp -r "$src/l3fwd" "$src/common" "$out/"
cd "$out/l3fwd"

# `change FILE OLD NEW`: replaces the one line OLD (a fixed string) by NEW, or fails.
change() {
    [ "$(grep -cF -- "$2" "$1")" = 1 ] || {
        echo "$0: $1 has no single line '$2' (another DPDK version?)" >&2
        exit 1
    }
    awk -v old="$2" -v new="$3" '{ if (index($0, old)) sub(/[^\t].*/, new); print }' \
        "$1" > "$1.new" && mv "$1.new" "$1"
}
change main.c '.offloads = RTE_ETH_RX_OFFLOAD_CHECKSUM,' '.offloads = 0,'
change l3fwd_fib.c 'config_ipv4.max_routes = (1 << 16);' 'config_ipv4.max_routes = (1 << 20);'
change l3fwd_fib.c 'config.max_routes = (1 << 16) - 1;' 'config.max_routes = (1 << 20);'
change l3fwd_fib.c 'config.trie.num_tbl8 = (1 << 15);' 'config.trie.num_tbl8 = (1 << 18);'

make -s >/dev/null
echo "$out/l3fwd/build/l3fwd"
