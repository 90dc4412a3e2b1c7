#!/usr/bin/env bash
# bench/report_render.sh HYPERPAR RUN_DIR [REPEATS]: how long `hyperpar report`
# takes for RUN_DIR, the page's size, and how long headless chromium takes to
# show it at 1366 x 3000: (a) in the page, the time from navigation start until
# the whole document is parsed and laid out (a copy of the page with a last
# script that forces layout and records performance.now()); (b) the wall time
# of `chromium --screenshot` of the page minus that of an empty page (browser
# start-up), median of REPEATS (default 3).
set -eu
HP=$1 RUN=$2 N=${3:-3}
CHROME=$(command -v chromium)
W=$(mktemp -d /tmp/hp-render-XXXXXX)
trap 'rm -rf "$W"' EXIT
t0=$(date +%s.%N)
"$HP" report "$RUN" -o "$W/page.html" >/dev/null
t1=$(date +%s.%N)
echo "report: $(echo "$t1 - $t0" | bc) s, $(stat -c %s "$W/page.html") bytes"
sed 's|</body>|<script>document.body.offsetHeight;document.body.setAttribute("data-ms",performance.now().toFixed(1))</script></body>|' \
  "$W/page.html" >"$W/timed.html"
echo '<!DOCTYPE html><html><body></body></html>' >"$W/empty.html"
flags=(--headless --no-sandbox --disable-gpu --disable-background-networking --no-first-run --window-size=1366,3000)
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
inpage=() shot=() empty=()
for i in $(seq "$N"); do
  "$CHROME" "${flags[@]}" --user-data-dir="$(mktemp -d "$W/p-XXXX")" --dump-dom "file://$W/timed.html" 2>/dev/null >"$W/dom.html"
  inpage+=("$(grep -o 'data-ms="[0-9.]*"' "$W/dom.html" | grep -o '[0-9.]*')")
  for page in page empty; do
    a=$(date +%s.%N)
    "$CHROME" "${flags[@]}" --user-data-dir="$(mktemp -d "$W/p-XXXX")" --screenshot="$W/$page.png" "file://$W/$page.html" \
      >/dev/null 2>&1
    b=$(date +%s.%N)
    if [ "$page" = page ]; then shot+=("$(echo "$b - $a" | bc)"); else empty+=("$(echo "$b - $a" | bc)"); fi
  done
done
echo "in-page parse + layout: median $(printf '%s\n' "${inpage[@]}" | median) ms (${inpage[*]})"
ms=$(printf '%s\n' "${shot[@]}" | median) me=$(printf '%s\n' "${empty[@]}" | median)
echo "screenshot: median $ms s, empty page $me s, difference $(echo "$ms - $me" | bc) s"
