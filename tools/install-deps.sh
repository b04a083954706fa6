#!/bin/sh
# Installs the Debian 12 packages Tach needs to build, run and test.
# Runs apt-get only for what is missing, with sudo when not root.
set -eu

packages="build-essential pkg-config meson ninja-build libglib2.0-dev
  libgtk-4-dev libadwaita-1-dev libdnnl-dev dataset-fashion-mnist
  gettext desktop-file-utils appstream xvfb xauth imagemagick
  fonts-wqy-microhei locales clang libclang-rt-14-dev protobuf-c-compiler libprotobuf-c-dev
  openmpi-bin libopenmpi-dev python3"

missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done

if [ -n "$missing" ]; then
  if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
  echo "tach: installing$missing" >&2
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends $missing
fi
