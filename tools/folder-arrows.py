#!/usr/bin/env python3
"""folder-arrows.py: the arrows between the engine's folders, read from the
built library, held against the order the README's "Layout" gives; and,
with --circles, the circles between the files of one folder.

Usage: tools/folder-arrows.py LIBTACH_ENGINE.a [--list] [--circles [OBJDIR ...]]

An arrow A -> B means that an object file of folder A calls (or reads) a
symbol that an object file of folder B defines, as `nm` sees them in the
static library: what the linker will bind, so a header that merely
declares something draws no arrow.  Folders are listed from the top
(analysis) to the ground (backend, stats), each with the folders it may
call (MAY_CALL).  The arrows that break that and are known (KNOWN, each with the reason
and the issue that tracks it) are listed, not failed; any other upward
arrow fails (exit 1), naming the symbols that make it.  --list prints
every arrow with its symbols.

--circles also reads the arrows between the object files of one folder
(a room, such as cpu/lstm/, is a folder of its own), in the library and
in each OBJDIR given (meson's object directories: the CLI's,
build/app/tach-cli.p, and the window's, build/app/tach.p and
build/ui/libtach-ui.a.p, each file named by the folder it is built in),
and finds their circles (strongly connected components, of any
length).  A circle passes only if its files lie within one unit of UNITS:
files that are one thing, each with the reason; any other circle fails,
naming the symbols of each arrow in it, and so does a unit of UNITS whose
files no longer form one circle (remove it).

Runs with the Python standard library and binutils' nm alone.
"""
import collections
import os
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

# Files of one folder that call one another and are one thing (a circle
# between them is how they are written), with why.
UNITS = [
    ({"settings/tach-config.c", "settings/tach-knobs.c", "settings/tach-knob-words.c",
      "settings/tach-presets.c"},
     "the knob table and the configuration it parses into: tach_config_set/get go through the "
     "rows, the rows' parsers write the configuration (a workload re-initialises it, a preset "
     "applies its settings through tach_config_set, a device re-applies the preset's GPU "
     "settings) and word their errors with the rows' names and labels"),
    ({"app/tach-cli-run.c", "app/tach-cli-scaling.c"},
     "the run command: `run --scaling` is one of its modes, called with the configuration "
     "tach_cli_command_run built, and its rounds run through the run command's session "
     "(hand-off, summary, CSV)"),
    ({"ui/tach-window.c", "ui/tach-window-actions.c", "ui/tach-window-compare.c",
      "ui/tach-window-notify.c", "ui/tach-window-open.c", "ui/tach-window-ranks.c",
      "ui/tach-window-settings.c"},
     "one class, TachWindow, written in parts by concern: every part works on the window's "
     "private struct (tach-window-private.h), the window's class and instance init call each "
     "part's, and the parts start, stop and report runs through the window's own functions"),
    ({"ui/tach-run-object.c", "ui/tach-run-object-text.c"},
     "one class, TachRunObject: its property getter (the text its figures are shown in) is "
     "the text file's, and that text reads the object's live figures through its getters"),
]


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


def objdir_folder(member):
    """The source folder of an object directory's object, from the
    directory meson builds it in: build/app/tach-cli.p/x.c.o -> app,
    build/ui/libtach-ui.a.p/x.c.o -> ui; None for a library's member."""
    parent = os.path.dirname(member)
    if parent.endswith(".p"):
        return os.path.basename(os.path.dirname(parent)) or None
    return None


def file_of(member):
    """The source file an object file comes from, as the tree names it:
    settings_tach-config.c.o -> settings/tach-config.c, cpu_lstm_... ->
    cpu/lstm/..., the CUDA library's objects by their folder, an object
    directory's (the CLI's, the window's) by the folder it is built in."""
    name = member.rsplit("/", 1)[-1]
    if name.startswith("meson-generated_"):
        return "output/" + name.rsplit("_", 1)[-1][:-2]
    parts = name[:-2].split("_")
    if len(parts) == 1:
        return "%s/%s" % (objdir_folder(member) or folder_of(member) or "app", parts[0])
    return "/".join(parts)


def read_symbols(paths):
    """(member, kind, symbol) of every defined or undefined symbol."""
    out = subprocess.run(["nm", "-A"] + paths, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        # "lib.a:member.o:0000 T name", "member.o:         U name"
        m = re.match(r"(?:[^:]*\.a:)?([^:]+):\s*(?:[0-9a-f]+\s+)?([A-Za-z])\s+(\S+)$", line)
        if m:
            yield m.groups()


def defines_and_uses(paths, key):
    """Which key (folder, file) defines each symbol, and which symbols each
    key uses; objects whose key is None are left out."""
    defines, uses = {}, collections.defaultdict(set)
    for member, kind, sym in read_symbols(paths):
        k = key(member)
        if k is None:
            continue
        if kind == "U":
            uses[k].add(sym)
        elif kind in "TDBRGS":
            defines.setdefault(sym, k)
    return defines, uses


def strongly_connected(graph):
    """Tarjan's strongly connected components of {node: {node: ...}}."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            out.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def circles(lib, objdirs):
    """Fails (returns the count) on the circles between the files of one
    folder that UNITS does not list, and on units that are no circle."""
    objs = [os.path.join(d, f) for d in objdirs for f in sorted(os.listdir(d)) if f.endswith(".o")]
    defines, uses = defines_and_uses([lib] + objs, file_of)
    graph = collections.defaultdict(dict)
    for f, syms in uses.items():
        for sym in syms:
            to = defines.get(sym)
            if to is not None and to != f and os.path.dirname(to) == os.path.dirname(f):
                graph[f].setdefault(to, set()).add(sym)
    bad = 0
    comps = [c for c in strongly_connected(graph) if len(c) > 1]
    for comp in comps:
        unit = next((u for u in UNITS if comp <= u[0]), None)
        if unit is not None:
            if "--list" in sys.argv:
                print("one unit: %s (%s)" % (", ".join(sorted(comp)), unit[1]))
            continue
        bad += 1
        print("CIRCLE: %s" % ", ".join(sorted(comp)))
        for f in sorted(comp):
            for to, syms in sorted(graph[f].items()):
                if to in comp:
                    print("  %s -> %s: %s" % (f, to, ", ".join(sorted(syms))))
    for files, why in UNITS:
        if all(f in graph or any(f in g for g in graph.values()) for f in files) and \
                not any(files <= c for c in comps):
            bad += 1
            print("NOT A CIRCLE: %s, listed as one unit (%s): remove it from UNITS"
                  % (", ".join(sorted(files)), why))
    if bad:
        print("%d circle(s) between the files of one folder: break them, or list the files as one "
              "unit in tools/folder-arrows.py's UNITS with the reason (and say so in their opening "
              "comments)" % bad, file=sys.stderr)
    return bad


def main():
    if "--circles" in sys.argv:
        rest = sys.argv[sys.argv.index("--circles") + 1:]
        args = [a for a in sys.argv[1:sys.argv.index("--circles")] if not a.startswith("--")]
    else:
        rest = []
        args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    defines, uses = defines_and_uses([args[0]], folder_of)
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
    if "--circles" in sys.argv:
        bad += circles(args[0], [a for a in rest if not a.startswith("--")])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
