#!/usr/bin/env python3
"""folder-arrows.py: the arrows between the engine's folders, read from the
built library, held against the order the README's "Layout" gives.

Usage: tools/folder-arrows.py LIBTACH_ENGINE.a [--list]

An arrow A -> B means that an object file of folder A calls (or reads) a
symbol that an object file of folder B defines, as `nm` sees them in the
static library: what the linker will bind, so a header that merely
declares something draws no arrow.  Folders are listed from the top
(analysis) to the ground (backend, stats), each with the folders it may
call (MAY_CALL).  The arrows that break that and are known (KNOWN, each with the reason
and the issue that tracks it) are listed, not failed; any other upward
arrow fails (exit 1), naming the symbols that make it.  --list prints
every arrow with its symbols.

Runs with the Python standard library and binutils' nm alone.
"""
import collections
import re
import subprocess
import sys

# What each folder may call (the README's "Layout"): from the top down,
# and models reach devices' backends only through the backend interface.
MAY_CALL = {
    "analysis": {"output", "run", "settings", "devices", "models", "data", "backend", "stats"},
    "output": {"run", "settings", "devices", "models", "data", "backend", "stats"},
    "run": {"settings", "devices", "models", "data", "backend", "stats"},
    "settings": {"devices", "models", "data", "backend", "stats"},
    "devices": {"cpu", "cuda", "backend", "stats"},
    "models": {"data", "backend", "stats"},
    "data": {"backend", "stats"},
    "cpu": {"backend", "stats"},
    "cuda": {"backend", "stats"},
    "backend": {"stats"},
    "stats": set(),
}

# Arrows that break the rule, known and tracked, with why: none since issue 35
# (the test provider is a registry row like the others).
KNOWN = {}


def folder_of(member):
    """engine/X/... objects are named X_tach-....c.o (X_Y_ for a room of X);
    the CUDA backend's objects come from their own library, unprefixed."""
    name = member.rsplit("/", 1)[-1]
    m = re.match(r"([a-z]+)_", name)
    if m and m.group(1) in MAY_CALL:
        return m.group(1)
    if name.startswith("tach-cuda") or name.endswith(".cu.o"):
        return "cuda"
    if name.startswith("tach-event.pb-c"):
        return "output"
    return None


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = subprocess.run(["nm", "-A", args[0]], capture_output=True, text=True, check=True).stdout
    defines, uses = {}, collections.defaultdict(set)
    for line in out.splitlines():
        # "lib.a:member.o:0000 T name" or "lib.a:member.o:         U name"
        m = re.match(r"[^:]*:([^:]+):\s*(?:[0-9a-f]+\s+)?([A-Za-z])\s+(\S+)$", line)
        if not m:
            continue
        member, kind, sym = m.groups()
        folder = folder_of(member)
        if folder is None:
            continue
        if kind == "U":
            uses[folder].add(sym)
        elif kind in "TDBRGS":
            defines.setdefault(sym, folder)
    arrows = collections.defaultdict(set)
    for folder, syms in uses.items():
        for sym in syms:
            to = defines.get(sym)
            if to is not None and to != folder:
                arrows[(folder, to)].add(sym)
    bad = 0
    for (a, b), syms in sorted(arrows.items()):
        up = b not in MAY_CALL[a]
        names = ", ".join(sorted(syms)[:6]) + (" and %d more" % (len(syms) - 6) if len(syms) > 6 else "")
        if up and (a, b) in KNOWN:
            print("known: %s -> %s (%s): %s" % (a, b, KNOWN[(a, b)], names))
        elif up:
            print("NOT ALLOWED: %s -> %s: %s" % (a, b, names))
            bad += 1
        elif "--list" in sys.argv:
            print("down: %s -> %s: %s" % (a, b, names))
    if bad:
        print("%d arrow(s) break the layering between the engine's folders: see the README's Layout" % bad,
              file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
