#!/usr/bin/env bash
# hyperpar report in a real browser: Debian's chromium (scripts/setup.sh
# --tests installs it) opens the pages of a traced DP=2 run, a comparison and
# a benchmark file headless, with no network and a fresh profile; the
# rendered DOM must hold the plots (path elements with a non-empty d, the
# axis labels), the page's script must have run (body data-rendered) with no
# error in the console or in the page's error box, and the screenshot at
# laptop width must be a PNG of that width; a pointer over the loss plot reads
# out the losses of the step under it. A page with a broken script is caught by
# the same checks (so they can fail).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ]; then
  echo "FAIL: chromium is not installed (bash scripts/setup.sh --tests installs it)" >&2
  exit 1
fi
SMALL=(--layers 1 --heads 2 --channels 32 --batch 4 --seq 16 --threads 2 --val-steps 1 --log-every 100)
"$HP" train "${SMALL[@]}" --dp 2 --steps 30 --val-every 10 --run-dir a --trace on --trace-steps 2 >a.out 2>&1 ||
  fail "train: $(tail -3 a.out)"
"$HP" train "${SMALL[@]}" --steps 30 --val-every 10 --lr 5e-3 --run-dir b >b.out 2>&1 || fail "train b: $(tail -3 b.out)"
"$HP" report a >r.out 2>&1 || fail "report: $(cat r.out)"
"$HP" report a --compare b -o cmp.html >c.out 2>&1 || fail "report --compare: $(cat c.out)"
printf '[{"config": "small", "tokens_per_s": 9000, "step_ms": 28.4, "forward_ms": 9, "backward_ms": 17, "optimizer_ms": 2.4},\n {"config": "medium", "tokens_per_s": 5000, "step_ms": 100, "forward_ms": 30, "backward_ms": 64, "optimizer_ms": 6}]\n' >bench.json
printf '[{"collective":"all-reduce","impl":"hyperpar","tier":"supernode","ranks":2,"bytes":65536,"time_us":20,"algbw_GBps":3.2,"busbw_GBps":3.2},\n {"collective":"all-reduce","impl":"hyperpar","tier":"supernode","ranks":2,"bytes":1048576,"time_us":150,"algbw_GBps":7,"busbw_GBps":7}]\n' >comm.json
"$HP" report --bench bench.json comm.json -o bench.html >bb.out 2>&1 || fail "report --bench: $(cat bb.out)"

# browse PAGE NAME: the rendered DOM (NAME.dom), the console (NAME.err) and a screenshot (NAME.png)
browse() {
  local page=$1 name=$2 prof
  prof=$(mktemp -d "$WORK/profile-XXXXXX")
  local flags=(--headless --no-sandbox --disable-gpu --disable-background-networking --no-first-run
               --user-data-dir="$prof" --enable-logging=stderr --v=0 --window-size=1366,3000)
  timeout 300 "$CHROME" "${flags[@]}" --dump-dom "file://$WORK/$page" >"$name.dom" 2>"$name.err" ||
    fail "chromium --dump-dom $page failed: $(tail -3 "$name.err")"
  prof=$(mktemp -d "$WORK/profile-XXXXXX")
  flags[5]=--user-data-dir="$prof"
  timeout 300 "$CHROME" "${flags[@]}" --screenshot="$WORK/$name.png" "file://$WORK/$page" >/dev/null 2>"$name.shot.err" ||
    fail "chromium --screenshot $page failed: $(tail -3 "$name.shot.err")"
}

# rendered NAME [LABEL ...]: the DOM has the plots drawn, the labels, and no error
rendered() {
  local name=$1; shift
  grep -h "CONSOLE" "$name.err" "$name.shot.err" >"$name.console" 2>/dev/null
  [ ! -s "$name.console" ] || fail "$name: console messages: $(head -3 "$name.console")"
  python3 - "$name.dom" "$name.png" "$@" <<'PY' || fail "$name: rendered page"
import re, struct, sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(self):
        super().__init__()
        self.paths, self.empty, self.labels, self.rendered, self.errbox = 0, 0, [], False, None
        self.cur = None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "path":
            if (a.get("d") or "").strip(): self.paths += 1
            else: self.empty += 1
        if tag == "body" and a.get("data-rendered") == "1": self.rendered = True
        if tag == "div" and a.get("id") == "errors": self.errbox, self.cur = ("hidden" in a, ""), "errors"
        if tag == "text" and "axis-label" in (a.get("class") or ""): self.cur = "label"; self.labels.append("")
    def handle_endtag(self, tag):
        if tag in ("div", "text"): self.cur = None
    def handle_data(self, d):
        if self.cur == "label": self.labels[-1] += d
        if self.cur == "errors": self.errbox = (self.errbox[0], self.errbox[1] + d)
p = P()
p.feed(open(sys.argv[1]).read())
fails = []
if p.paths < 1 or p.empty: fails.append(f"{p.paths} paths with a d, {p.empty} empty")
if not p.rendered: fails.append("the page's script did not finish (no data-rendered)")
if p.errbox is None or not p.errbox[0] or p.errbox[1].strip(): fails.append(f"error box: {p.errbox}")
for want in sys.argv[3:]:
    if want not in p.labels: fails.append(f"axis label {want!r} missing (have {sorted(set(p.labels))})")
png = open(sys.argv[2], "rb").read()
if png[:8] != b"\x89PNG\r\n\x1a\n": fails.append("screenshot is not a PNG")
else:
    w, h = struct.unpack(">II", png[16:24])
    if w != 1366: fails.append(f"screenshot {w}x{h}, expected width 1366")
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
}

browse a/report.html run
rendered run "step" "loss (nats per token)" "learning rate" "global L2 norm" "tokens / s" "time (ms)" "MB"
grep -q 'class="series"' run.dom || fail "no curves in the rendered run page"
browse cmp.html cmp
rendered cmp "step" "loss (nats per token)"
browse bench.html bench
rendered bench "tokens_per_s" "ms per step" "bytes" "bus bandwidth (GB/s)"
grep -q '<rect class="bar"' bench.dom || fail "no bars in the rendered bench page"
# hovering over the loss plot's right end reads out the last step's losses
sed 's|</body>|<script>var s=document.querySelector("#plot-loss svg"),r=s.getBoundingClientRect();s.dispatchEvent(new MouseEvent("mousemove",{clientX:r.right-5,clientY:r.top+40}));</script></body>|' \
  a/report.html >hover.html
browse hover.html hover
python3 - hover.dom a/metrics.jsonl <<'PY' || fail "hover read-out"
import json, re, sys
m = re.search(r'<span class="hover"> at ([0-9.]+): training ([0-9.]+), validation ([0-9.]+)</span>', open(sys.argv[1]).read())
assert m, "no hover text"
rows = [json.loads(l) for l in open(sys.argv[2])]
loss = [r["loss"] for r in rows if r.get("step") == 30 and "loss" in r][0]
val = [r["val_loss"] for r in rows if r.get("step") == 30 and "val_loss" in r][0]
assert float(m.group(1)) == 30, m.group(0)
assert abs(float(m.group(2)) - loss) < 0.01 and abs(float(m.group(3)) - val) < 0.01, (m.group(0), loss, val)
PY
# the checks catch a broken page
sed 's|</body>|<script>undefined_function_of_the_test()</script></body>|' a/report.html >broken.html
browse broken.html broken
grep -q "CONSOLE" broken.err || fail "a script error did not reach the console log"
grep -q "undefined_function_of_the_test" broken.dom || fail "the error box did not get the error"
finish
