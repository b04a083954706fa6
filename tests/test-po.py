#!/usr/bin/env python3
"""test-po.py: the translations, checked against the real tree.

- po/POTFILES.in lists exactly the files whose strings xgettext extracts
  (_(), N_(), C_(), W_(), g_dngettext() in the sources under app/, ui/,
  engine/ and include/; translatable properties in .ui files; the desktop
  file and the metainfo): a file that gains messages, or one that moves,
  must be listed, and a listed file must exist and hold some.
- po/zh_CN.po translates every one of those messages (none missing, none
  fuzzy), so the Chinese window and tach-cli are complete.
- tach-cli run from this build folder, as the README runs it, finds the
  catalogues built here: with LANGUAGE=zh_CN it speaks Chinese.

Usage: test-po.py SOURCE_ROOT TACH_CLI.  Exits 77 (skip) without xgettext
or msgcmp.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

SOURCE_DIRS = ("app", "ui", "engine", "include", "resources")
SOURCE_EXTS = (".c", ".h", ".ui", ".desktop.in", ".metainfo.xml.in")
# The keywords of meson's 'glib' preset and the project's W_().
KEYWORDS = ["_", "N_", "C_:1c,2", "NC_:1c,2", "g_dcgettext:2", "g_dngettext:2,3",
            "g_dpgettext2:2c,3", "W_"]


def candidates(root):
    found = []
    for top in SOURCE_DIRS:
        for folder, _dirs, names in os.walk(os.path.join(root, top)):
            for name in names:
                if name.endswith(SOURCE_EXTS):
                    found.append(os.path.relpath(os.path.join(folder, name), root))
    return sorted(found)


def xgettext(root, files, pot):
    args = ["xgettext", "--from-code=UTF-8", "--add-comments", "--package-name=tach",
            "-o", pot, "-D", root] + ["--keyword=" + k for k in KEYWORDS] + files
    subprocess.run(args, check=True, stderr=subprocess.PIPE, text=True)


def files_with_messages(pot):
    """The files named by the .pot's "#: file:line" references."""
    files = set()
    with open(pot, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#: "):
                for ref in line[3:].split():
                    files.add(ref.rsplit(":", 1)[0])
    return files


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    root, cli = sys.argv[1], sys.argv[2]
    if shutil.which("xgettext") is None or shutil.which("msgcmp") is None:
        print("SKIP: xgettext or msgcmp is missing (gettext)")
        return 77
    failures = []

    listed = []
    with open(os.path.join(root, "po", "POTFILES.in"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                listed.append(line)
    for path in listed:
        if not os.path.exists(os.path.join(root, path)):
            failures.append("po/POTFILES.in lists %s, which does not exist: "
                            "remove it or give its new path" % path)

    with tempfile.TemporaryDirectory() as tmp:
        # Each source file on its own would be slow; together, the .pot's
        # references say which hold messages.
        all_pot = os.path.join(tmp, "all.pot")
        xgettext(root, candidates(root), all_pot)
        have = files_with_messages(all_pot)
        for path in sorted(have - set(listed)):
            failures.append("%s has translatable strings but is not in po/POTFILES.in: "
                            "add it" % path)
        for path in sorted(set(listed) - have):
            if os.path.exists(os.path.join(root, path)):
                failures.append("po/POTFILES.in lists %s, which has no translatable string: "
                                "remove it" % path)

        # The catalogue against the messages of the listed files.
        pot = os.path.join(tmp, "tach.pot")
        xgettext(root, [p for p in listed if os.path.exists(os.path.join(root, p))], pot)
        cmp = subprocess.run(["msgcmp", os.path.join(root, "po", "zh_CN.po"), pot],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if cmp.returncode != 0:
            # Its warnings about translations no longer used are not failures.
            lines = [l for l in cmp.stdout.splitlines() if "this message is not used" not in l]
            failures.append("po/zh_CN.po is not complete: translate these (msgcmp)\n"
                            + "\n".join(lines))
        fuzzy = subprocess.run(["msgattrib", "--only-fuzzy", "--no-obsolete",
                                os.path.join(root, "po", "zh_CN.po")],
                               stdout=subprocess.PIPE, text=True, check=True).stdout
        if "msgid" in fuzzy:
            failures.append("po/zh_CN.po has fuzzy entries: review them and drop the flag\n"
                            + fuzzy.strip())

    # The README's build, not installed: LANGUAGE=zh_CN speaks Chinese.
    env = dict(os.environ, LC_ALL="C.UTF-8", LANGUAGE="zh_CN")
    out = subprocess.run([cli, "run", "--workload", "no-such-workload"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if out.returncode != 2 or not re.search("[\u4e00-\u9fff]", out.stdout):
        failures.append("%s with LANGUAGE=zh_CN, run from the build folder, does not speak "
                        "Chinese (exit %d):\n%s" % (cli, out.returncode, out.stdout.strip()))

    for failure in failures:
        print("FAIL: " + failure)
    if not failures:
        print("ok: %d files in po/POTFILES.in, zh_CN complete, the build's catalogues found"
              % len(listed))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
