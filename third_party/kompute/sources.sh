#!/usr/bin/env bash
# Writes the patched Kompute sources to DEST: the kp==0.9.0 sdist (its sha256 checked)
# with every patch in patches/ applied in order. DEST gets a stamp of the patches, so a
# second run with the same patches does nothing. PYTHON's pip fetches the sdist, so its
# index configuration applies; an sdist already at $VKSYCL_KP_SDIST is used instead
# (machines without network).
#   third_party/kompute/sources.sh PYTHON DEST
set -euo pipefail
python=$1 dest=$2
here=$(cd "$(dirname "$0")" && pwd)
sha=98e583dc6e9731ff6d7a3e3317817e4d93f7b2945929619e29a56325db279949
stamp=$(cat "$here"/patches/*.patch "$0" | sha256sum | cut -c1-12)
if [ "$(cat "$dest/.vksycl-patches" 2>/dev/null)" = "$stamp" ]; then exit 0; fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sdist=${VKSYCL_KP_SDIST:-}
if [ -z "$sdist" ]; then
  "$python" -m pip download -q --no-deps --no-binary=:all: -d "$work" kp==0.9.0 >&2
  sdist="$work/kp-0.9.0.tar.gz"
fi
echo "$sha  $sdist" | sha256sum -c --quiet -
tar -xzf "$sdist" -C "$work"
for p in "$here"/patches/*.patch; do patch -s -p1 -d "$work/kp-0.9.0" < "$p"; done
echo "$stamp" > "$work/kp-0.9.0/.vksycl-patches"
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$work/kp-0.9.0" "$dest"
