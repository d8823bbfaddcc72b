#!/bin/sh
# Installs lpmkit's C libraries with their headers and pkg-config files:
#
#   liblpmkit.so, liblpmkit.a   lpmkit's C API (lpmkit-capi)       lpmkit.h          lpmkit.pc
#   liblpmkit_rte_fib.so        DPDK's rte_fib API (lpmkit-dpdk)   lpmkit_rte_fib.h  lpmkit-rte-fib.pc
#
# so that a C program builds with `pkg-config --cflags --libs lpmkit` (or `lpmkit-rte-fib
# libdpdk` for a DPDK application linked to lpmkit in place of librte_fib).
#
# usage: scripts/install-c.sh [--prefix DIR] [--libdir DIR] [--includedir DIR]
#                             [--destdir DIR] [--from TARGETDIR]
#   --prefix     where to install (default /usr/local); --libdir, --includedir default to
#                PREFIX/lib and PREFIX/include
#   --destdir    a staging root prepended to every path written (packaging)
#   --from       install the libraries already built in TARGETDIR (e.g. target/release)
#                instead of building them with `cargo build --release`
set -eu

prefix=/usr/local
libdir=
includedir=
destdir=
from=
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix="$2"; shift 2 ;;
        --libdir) libdir="$2"; shift 2 ;;
        --includedir) includedir="$2"; shift 2 ;;
        --destdir) destdir="$2"; shift 2 ;;
        --from) from="$2"; shift 2 ;;
        *) echo "$0: unknown argument $1 (see the comment at the top)" >&2; exit 2 ;;
    esac
done
libdir="${libdir:-$prefix/lib}"
includedir="${includedir:-$prefix/include}"

root="$(cd "$(dirname "$0")/.." && pwd)"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)

if [ -z "$from" ]; then
    (cd "$root" && cargo build --release -p lpmkit-capi -p lpmkit-dpdk)
    from="$root/target/release"
fi

# `find_lib NAME`: the file cargo built (the target directory, or its deps/ after `cargo
# test`, the newer of the two).
find_lib() {
    newest=
    for f in "$from/$1" "$from/deps/$1"; do
        if [ -f "$f" ] && { [ -z "$newest" ] || [ "$f" -nt "$newest" ]; }; then newest="$f"; fi
    done
    [ -n "$newest" ] || { echo "$0: $1 is not in $from (build it first)" >&2; exit 1; }
    echo "$newest"
}
capi_so=$(find_lib liblpmkit_capi.so)
capi_a=$(find_lib liblpmkit_capi.a)
fib_so=$(find_lib liblpmkit_rte_fib.so)

install -d "$destdir$libdir/pkgconfig" "$destdir$includedir"
install -m 0755 "$capi_so" "$destdir$libdir/liblpmkit.so"
install -m 0644 "$capi_a" "$destdir$libdir/liblpmkit.a"
install -m 0755 "$fib_so" "$destdir$libdir/liblpmkit_rte_fib.so"
install -m 0644 "$root/lpmkit-capi/include/lpmkit.h" "$destdir$includedir/lpmkit.h"
install -m 0644 "$root/lpmkit-dpdk/include/lpmkit_rte_fib.h" "$destdir$includedir/lpmkit_rte_fib.h"

cat > "$destdir$libdir/pkgconfig/lpmkit.pc" <<EOF
prefix=$prefix
libdir=$libdir
includedir=$includedir

Name: lpmkit
Description: Longest-prefix-match routing tables: lpmkit's C API
Version: $version
Libs: -L\${libdir} -llpmkit
Libs.private: -lpthread -ldl -lm
Cflags: -I\${includedir}
EOF

cat > "$destdir$libdir/pkgconfig/lpmkit-rte-fib.pc" <<EOF
prefix=$prefix
libdir=$libdir
includedir=$includedir

Name: lpmkit-rte-fib
Description: DPDK's rte_fib and rte_fib6 API served by lpmkit (list it before libdpdk)
Version: $version
Requires.private: libdpdk
Libs: -L\${libdir} -llpmkit_rte_fib
Cflags: -I\${includedir}
EOF

echo "installed into $destdir$prefix: $libdir/{liblpmkit.so,liblpmkit.a,liblpmkit_rte_fib.so}," \
    "$includedir/{lpmkit.h,lpmkit_rte_fib.h}, $libdir/pkgconfig/{lpmkit.pc,lpmkit-rte-fib.pc}"
