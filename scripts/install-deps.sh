#!/usr/bin/env bash
# Installs the Debian packages scaleplan builds and tests with. Idempotent.
# python3 (standard library only) runs the JSON checks of tests/cli/*.sh; clang with its
# runtime libraries (libFuzzer, sanitizers) builds the fuzz harnesses of `make fuzz`.
set -euo pipefail
PKGS="build-essential python3 libcjson-dev libsqlite3-dev libglpk-dev libgsl-dev libopenblas-dev libopenmpi-dev openmpi-bin gnuplot-nox clang libclang-rt-dev"
missing=""
for p in $PKGS; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
fi
