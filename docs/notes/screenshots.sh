#!/usr/bin/env bash
# Builds the site and screenshots five of its pages with headless Chromium (Debian's
# `chromium`), into docs/notes/screenshots/:
#
#     bash docs/notes/screenshots.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${PYTHON:-.venv/bin/python}
out=docs/notes/screenshots
site=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$site"' EXIT
NO_MKDOCS_2_WARNING=1 "$py" -m mkdocs build --strict --quiet --site-dir "$site"
port=8765
"$py" -m http.server "$port" --bind 127.0.0.1 --directory "$site" >/dev/null 2>&1 &
server=$!
sleep 1
mkdir -p "$out"
shot() {  # name, path, height
  chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size=1280,"$3" --virtual-time-budget=4000 \
    --screenshot="$out/$1.png" "http://127.0.0.1:$port/$2" >/dev/null 2>&1
  echo "$out/$1.png"
}
shot home "" 1400
shot guide-graphs "guides/graphs/" 1400
shot api-queue "api/queues/" 1400
shot gallery "gallery/" 1800
shot performance "performance/" 1800
