#!/usr/bin/env bash
# gpu-bundle — collects, on a machine with Debian's package lists, the host libraries that
# scaleplan links (cJSON, SQLite, GLPK, GSL, OpenBLAS: headers, link names, shared objects and
# the shared objects they need) as .deb files into .gpu/debs/ (ignored by git), for a GPU
# machine that has CUDA but none of these packages and no network. tests/gpu/run.sh unpacks
# them there with `dpkg -x` into a private prefix (never into /) and builds against it.
#
# Usage: scripts/gpu-bundle.sh [DIR]   (default .gpu in the repository root)
# Writes DIR/debs/*.deb and DIR/MANIFEST (package, version, sha256 of each file), prints the
# bundle's size, and exits non-zero when a package cannot be found or the bundle reaches 40 MiB
# (the whole working tree that travels to the GPU machine is limited to 64 MiB).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-.gpu}
LIMIT_BYTES=$((40 * 1024 * 1024))

# The libraries the Makefile's LDLIBS names (-lcjson -lsqlite3 -lglpk -lgsl -lopenblas), then
# what their shared objects need beyond glibc and libgcc_s (apt-cache depends of each, read
# 2026-12 on Debian 12): GLPK needs AMD, COLAMD (SuiteSparse), GMP, libltdl and zlib; GSL its
# CBLAS; OpenBLAS (the pthread variant) gfortran's runtime, which needs libquadmath.
PKGS=(
	libcjson1 libcjson-dev
	libsqlite3-0 libsqlite3-dev
	libglpk40 libglpk-dev libamd2 libcolamd2 libsuitesparseconfig5 libgmp10 libltdl7 zlib1g
	libgsl27 libgslcblas0 libgsl-dev
	libopenblas0-pthread libopenblas-pthread-dev libopenblas-dev libgfortran5 libquadmath0
)

known() { apt-cache show --no-all-versions "$1" >/dev/null 2>&1; }
missing=()
for p in "${PKGS[@]}"; do known "$p" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
	echo "gpu-bundle: not in the package lists: ${missing[*]}; running apt-get update" >&2
	apt-get update -qq
	missing=()
	for p in "${PKGS[@]}"; do known "$p" || missing+=("$p"); done
	if [ ${#missing[@]} -gt 0 ]; then
		echo "gpu-bundle: no package named ${missing[*]} (apt-cache search NAME finds this release's name)" >&2
		exit 1
	fi
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# apt-get download writes into the current directory; as root it drops privileges to _apt,
# which must be able to write there
chmod 777 "$tmp"
(cd "$tmp" && apt-get download -qq "${PKGS[@]}")
rm -rf "$DIR/debs"
mkdir -p "$DIR/debs"
mv "$tmp"/*.deb "$DIR/debs/"
{
	echo "# package version sha256 (scripts/gpu-bundle.sh, $(date -u +%Y-%m-%d))"
	for f in "$DIR"/debs/*.deb; do
		echo "$(dpkg-deb -f "$f" Package) $(dpkg-deb -f "$f" Version) $(sha256sum "$f" | cut -d' ' -f1)"
	done
} >"$DIR/MANIFEST"

bytes=$(du -cb "$DIR"/debs/*.deb | tail -n 1 | cut -f1)
echo "gpu-bundle: $(ls "$DIR"/debs/*.deb | wc -l) packages in $DIR/debs, $bytes bytes ($(awk -v b="$bytes" 'BEGIN{printf "%.1f", b/1048576}') MiB)"
if [ "$bytes" -ge "$LIMIT_BYTES" ]; then
	echo "gpu-bundle: the bundle is over 40 MiB; the working tree that travels is limited to 64 MiB" >&2
	exit 1
fi
