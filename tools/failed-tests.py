#!/usr/bin/env python3
"""Names each test that failed in meson's testlog.json files, with the last
lines it printed: the CI keeps only the tail of its log, where meson's own
error logs of the first build have long scrolled away."""
import json
import sys

BAD = {"FAIL", "TIMEOUT", "ERROR", "UNEXPECTEDPASS"}

for path in sys.argv[1:]:
    try:
        lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    except OSError as e:
        print(f"{path}: not read ({e.strerror})", file=sys.stderr)
        continue
    for line in lines:
        try:
            t = json.loads(line)
        except ValueError:
            continue
        if t.get("result") not in BAD:
            continue
        out = (t.get("stdout") or "").splitlines()
        print(f"--- failed in {path.split('/')[0]}: {t.get('name')} ({t.get('result')}, "
              f"{t.get('duration', 0):.1f} s); its last lines:", file=sys.stderr)
        for o in out[-25:]:
            print(f"    {o}", file=sys.stderr)
