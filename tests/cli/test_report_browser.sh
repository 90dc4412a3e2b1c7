#!/usr/bin/env bash
# hyperpar report in a real browser: Debian's chromium (scripts/setup.sh
# --tests installs it) opens the pages of a traced DP=2 run, a comparison and
# a benchmark file headless, with no network and a fresh profile; the
# rendered DOM must hold the plots (path elements with a non-empty d, the
# axis labels), the page's script must have run (body data-rendered) with no
# error in the console or in the page's error box, and the screenshot at
# laptop width must be a PNG of that width; a pointer over the loss plot reads
# out the losses of the step under it. A page with a broken script is caught by
# the same checks (so they can fail). Issue 21 item 11, in the rendered DOM
# (report_check.py --dom): the step-time split stacked (each layer the running
# sum of the metrics' parts, and the pointer reads out each layer's own
# value), a unit on every axis and every bar value, the compare page's
# per-run series (each run's loss smoothed, its split and its memory); the
# smoothing slider moved to 0.9 redraws the smoothed loss as the debiased EMA
# with 0.9; and without the page's scripts the page is the same drawing
# (smoothed with 0.6, the slider hidden, the static note shown).
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

CHECK="python3 $HERE/report_check.py"
SPLIT="compute_ms=compute,comm_ms=exposed communication,optimizer_ms=optimizer,other_ms=other"
browse a/report.html run
rendered run "step" "loss (nats per token)" "learning rate" "gradient norm (global L2)" "throughput (tokens/s)" \
  "time (ms)" "time per step (ms)" "memory (kB)"
grep -q 'class="series"' run.dom || fail "no curves in the rendered run page"
$CHECK run.dom --dom --axis-units --stacked "plot-split=a/metrics.jsonl:$SPLIT" plot-split:compute=30 \
  --smoothed plot-loss:training=0.6 plot-loss:training=30 || fail "rendered run page: stacked split, units, smoothing"
browse cmp.html cmp
rendered cmp "step" "loss (nats per token)" "time per step (ms)" "memory (kB)"
$CHECK cmp.dom --dom --axis-units "plot-loss:a train=30" "plot-loss:b train=30" "plot-loss:a train smoothed=30" \
  "plot-loss:b train smoothed=30" --smoothed "plot-loss:a train=0.6" --smoothed "plot-loss:b train=0.6" \
  plot-split:compute=30 plot-split-1:compute=30 --stacked "plot-split=a/metrics.jsonl:$SPLIT" \
  --stacked "plot-split-1=b/metrics.jsonl:$SPLIT" --text "step-time split: a" --text "step-time split: b" \
  --text "a: rank 0" --text "a: rank 1" --text "b: rank 0" || fail "rendered compare page: every run's series"
browse bench.html bench
rendered bench "tokens_per_s (tokens/s)" "time per step (ms)" "message size (bytes)" "bus bandwidth (GB/s)"
$CHECK bench.dom --dom --axis-units || fail "rendered bench page: units"
grep -q '<rect class="bar"' bench.dom || fail "no bars in the rendered bench page"
# hovering over the loss plot's right end reads out the last step's losses
sed 's|</body>|<script>var s=document.querySelector("#plot-loss svg"),r=s.getBoundingClientRect();s.dispatchEvent(new MouseEvent("mousemove",{clientX:r.right-5,clientY:r.top+40}));</script></body>|' \
  a/report.html >hover.html
browse hover.html hover
python3 - hover.dom a/metrics.jsonl <<'PY' || fail "hover read-out"
import json, re, sys
m = re.search(r'<span class="hover"> at ([0-9.]+): training ([0-9.]+), training smoothed [0-9.]+, validation ([0-9.]+)</span>',
              open(sys.argv[1]).read())
assert m, "no hover text"
rows = [json.loads(l) for l in open(sys.argv[2])]
loss = [r["loss"] for r in rows if r.get("step") == 30 and "loss" in r][0]
val = [r["val_loss"] for r in rows if r.get("step") == 30 and "val_loss" in r][0]
assert float(m.group(1)) == 30, m.group(0)
assert abs(float(m.group(2)) - loss) < 0.01 and abs(float(m.group(3)) - val) < 0.01, (m.group(0), loss, val)
PY
# hovering over the stacked split's right end reads out each layer's own value at the last step
sed 's|</body>|<script>var s=document.querySelector("#plot-split svg"),r=s.getBoundingClientRect();s.dispatchEvent(new MouseEvent("mousemove",{clientX:r.right-5,clientY:r.top+40}));</script></body>|' \
  a/report.html >hover2.html
browse hover2.html hover2
python3 - hover2.dom a/metrics.jsonl <<'PY' || fail "stacked hover read-out"
import json, re, sys
dom = open(sys.argv[1]).read().split('id="plot-split"')[1]
m = re.search(r'<span class="hover"> at ([0-9.]+): compute ([-0-9.e]+), exposed communication ([-0-9.e]+), '
              r'optimizer ([-0-9.e]+), other ([-0-9.e]+)</span>', dom)
assert m, "no hover text: " + dom[:300]
rows = [json.loads(l) for l in open(sys.argv[2]) if '"loss"' in l]
last = [r for r in rows if r["step"] == 30][0]
total = max(r["compute_ms"] + r["comm_ms"] + r["optimizer_ms"] + r["other_ms"] for r in rows)
tol = total * 1.04 / 198 * 0.2 + 0.01  # two coordinates rounded to 0.1 px, and the 3 digits shown
assert float(m.group(1)) == 30, m.group(0)
for k, f in enumerate(["compute_ms", "comm_ms", "optimizer_ms", "other_ms"]):
    assert abs(float(m.group(k + 2)) - last[f]) <= tol + 0.005 * last[f], (f, m.group(0), last, tol)
PY
# the smoothing slider at 0.9: the smoothed loss is redrawn as the debiased EMA with 0.9
sed 's|</body>|<script>var i=document.querySelector("#plot-loss input[type=range]");i.value="0.9";i.dispatchEvent(new Event("input"));</script></body>|' \
  a/report.html >slide.html
browse slide.html slide
rendered slide "step"
$CHECK slide.dom --dom --smoothed plot-loss:training=0.9 "plot-loss:training smoothed=30" || fail "slider at 0.9"
grep -q '<label class="smoothing">smoothing <input[^>]*> <output>0.90</output></label>' slide.dom ||
  fail "the slider is not shown or its value not written"
$CHECK slide.dom --dom --smoothed plot-loss:training=0.6 >/dev/null && fail "the slider did not change the curve"
# without the page's scripts: the same drawing, smoothed with 0.6; the slider hidden, the static note shown
python3 -c "import re,sys; open(sys.argv[2],'w').write(re.sub(r'<script>.*?</script>','',open(sys.argv[1]).read(),flags=re.S))" \
  a/report.html nojs.html
grep -q '<script' nojs.html && fail "scripts left in nojs.html"
browse nojs.html nojs
$CHECK nojs.dom --dom --smoothed plot-loss:training=0.6 plot-loss:training=30 --stacked "plot-split=a/metrics.jsonl:$SPLIT" \
  || fail "the page without scripts"
grep -q 'data-rendered' nojs.dom && fail "nojs.html ran the page's script"
grep -q '<label class="smoothing" hidden="">' nojs.dom || fail "without scripts the slider shows (it cannot work)"
grep -q '<span class="smooth-static">smoothed (weight 0.60), raw curve faint</span>' nojs.dom ||
  fail "without scripts the page does not say what is drawn"
# the checks catch a broken page
sed 's|</body>|<script>undefined_function_of_the_test()</script></body>|' a/report.html >broken.html
browse broken.html broken
grep -q "CONSOLE" broken.err || fail "a script error did not reach the console log"
grep -q "undefined_function_of_the_test" broken.dom || fail "the error box did not get the error"
finish
