#!/usr/bin/env python3
"""test-desktop.py: what a Flathub reviewer and GNOME's guidelines ask of
the desktop integration, checked on the built metainfo and the sources.

- The metainfo names its developer with <developer id><name>, pins its
  screenshots to a release's tag or a commit that holds them (no branch), tags the Chinese one with
  its language, gives light and dark brand colours, a summary of at most 35
  characters, its gettext domain and its repository's address.
- A symbolic app icon is installed beside the full-colour one.
- The primary menu has no Quit; Stop is not styled destructive (it keeps
  what was measured); the shortcuts window lists Alt+1..3 and F9 under
  Views and F10 under General.

Usage: test-desktop.py SOURCE_ROOT BUILD_ROOT.
"""
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
APP_ID = "io.github.tach.Tach"


def git_has(src, rev):
    """Whether the git checkout at src has the object rev."""
    try:
        return subprocess.run(["git", "-C", src, "cat-file", "-e", rev],
                              capture_output=True).returncode == 0
    except OSError:
        return False


def check_metainfo(src, build):
    root = ET.parse(os.path.join(build, "resources", APP_ID + ".metainfo.xml")).getroot()
    assert root.find("developer_name") is None, "the deprecated <developer_name>"
    developer = root.find("developer")
    assert developer is not None and developer.get("id"), "<developer id=...>"
    assert developer.findtext("name"), "<developer><name>"
    summary = [s.text for s in root.findall("summary") if s.get(XML_LANG) is None][0]
    assert len(summary) <= 35, "summary of %d characters: %s" % (len(summary), summary)
    assert root.findtext("translation[@type='gettext']") == "tach"
    assert root.find("url[@type='vcs-browser']") is not None
    schemes = {c.get("scheme_preference") for c in root.findall("branding/color[@type='primary']")}
    assert schemes == {"light", "dark"}, schemes
    images = root.findall("screenshots/screenshot/image")
    for image in images:
        assert "/raw/main/" not in image.text and "/blob/main/" not in image.text, image.text
        pin = image.text.split("/raw/", 1)[1].split("/", 1)[0] if "/raw/" in image.text else ""
        assert re.fullmatch(r"v[0-9.]+|[0-9a-f]{40}", pin), "not pinned to a tag or commit: " + image.text
        # The pinned commit holds the file, where this checkout has that
        # commit (a shallow clone may not).
        if re.fullmatch(r"[0-9a-f]{40}", pin) and git_has(src, pin + "^{commit}"):
            path = image.text.split("/raw/" + pin + "/", 1)[1]
            assert git_has(src, pin + ":" + path), "not at " + pin + ": " + path
    chinese = [i for i in images if "zh_CN" in i.text]
    assert chinese and all(i.get(XML_LANG) == "zh_CN" for i in chinese), "zh_CN untagged"


def check_icons(build):
    with open(os.path.join(build, "meson-info", "intro-installed.json")) as f:
        installed = json.load(f).values()
    for wanted in ("scalable/apps/" + APP_ID + ".svg", "symbolic/apps/" + APP_ID + "-symbolic.svg"):
        assert any(p.endswith("icons/hicolor/" + wanted) for p in installed), wanted + " not installed"


def check_window(source):
    window = ET.parse(os.path.join(source, "ui", "tach-window.ui")).getroot()
    actions = [a.text for a in window.iter("attribute") if a.get("name") == "action"]
    assert "app.quit" not in actions, "Quit in the primary menu"
    for button in window.iter("object"):
        props = {p.get("name"): p.text for p in button.findall("property")}
        if props.get("action-name") == "win.stop":
            classes = [c.get("name") for c in button.iter("class")]
            assert "destructive-action" not in classes, "Stop styled destructive"
    with open(os.path.join(source, "ui", "tach-task-view.c")) as f:
        assert '"destructive-action"' not in f.read(), "task buttons' Stop styled destructive"

    overlay = ET.parse(os.path.join(source, "resources", "gtk", "help-overlay.ui")).getroot()
    groups = {}
    for group in overlay.iter("object"):
        if group.get("class") != "GtkShortcutsGroup":
            continue
        title = group.findtext("property[@name='title']")
        keys = groups.setdefault(title, set())
        for shortcut in group.iter("object"):
            props = {p.get("name"): p.text for p in shortcut.findall("property")}
            keys.add(props.get("accelerator") or props.get("action-name"))
    assert {"<Alt>1", "<Alt>2", "<Alt>3", "win.toggle-config"} <= groups.get("Views", set()), groups
    assert "F10" in groups.get("General", set()), groups


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    check_metainfo(sys.argv[1], sys.argv[2])
    check_icons(sys.argv[2])
    check_window(sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
