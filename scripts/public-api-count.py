#!/usr/bin/env python3
"""Counts the public items in a `cargo public-api -ss` listing (docs/public-api.txt).

An item is a module, type, trait, function, constant, static or type alias, or an inherent
method or associated item; each is counted once, under its path. Trait-impl methods (the
`Clone`, `Fib`, … impls of each type) and fields/variants are not counted: they repeat the
trait, not new API. `--list` prints the items.
"""
import re
import sys


def strip_generics(s):
    out, depth = [], 0
    for ch in s:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


ITEM = re.compile(
    r"(?:#\[[^\]]*\] )*pub (?:unsafe )?(?:const )?"
    r"(fn|struct|enum|trait|mod|const|static|type|use|macro)\b (.*)"
)


def items(path):
    found, in_trait_impl = set(), False
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith(("impl", "unsafe impl")):
            in_trait_impl = " for " in line
            continue
        m = ITEM.match(line)
        if not m:
            continue
        kind, rest = m.group(1), m.group(2)
        rest = strip_generics(rest.split("(")[0] if kind == "fn" else rest)
        name = re.split(r"[:=]\s", rest)[0].strip()
        # A free function follows its module's impl blocks in the listing.
        free_fn = kind == "fn" and re.fullmatch(r"lpmkit(::[a-z_0-9]+)+", name)
        if kind in ("struct", "enum", "trait", "mod"):
            in_trait_impl = False
        if in_trait_impl and not free_fn and kind in ("fn", "type", "const"):
            continue
        found.add(f"{kind} {name}")
    return sorted(found)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--list"]
    listed = items(args[0] if args else "docs/public-api.txt")
    if "--list" in sys.argv:
        print("\n".join(listed))
    print(f"{len(listed)} public items", file=sys.stderr)
