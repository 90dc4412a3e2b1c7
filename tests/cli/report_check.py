#!/usr/bin/env python3
"""Checks a `hyperpar report` page from its DOM (python's html.parser).

usage: report_check.py PAGE.html [FIGURE_ID:SERIES=POINTS ...] [--text TEXT ...] [--no-text TEXT ...]
                       [--no-figure ID ...] [--smoothed FIGURE_ID:SERIES=WEIGHT ...]
                       [--stacked FIGURE_ID=METRICS:FIELD=SERIES,... ...] [--axis-units] [--dom]

Always checks that the page parses as HTML (tags balanced inside <svg>),
that every figure.plot holds exactly one <svg>, that every path.series has a
non-empty d whose point count equals its data-n, that nothing refers to
anything outside the file (no URL scheme, no src/href, no url(), no @import),
that no coordinate is NaN or infinite, that every bar's value label carries a
unit and is rounded (a whole number or at most 3 significant digits), and
that no table cell prints a number with 7 or more decimals.
FIGURE_ID:SERIES=POINTS: that figure's linear view has a curve SERIES (its
data-series; "" for an unnamed one) with exactly POINTS points. --text: the
page's text contains TEXT (--no-text: does not). --smoothed: in every view of
the figure, the curve "SERIES smoothed" is TensorBoard's debiased EMA with
WEIGHT of the raw points the figure carries for SERIES (g.smooth-src), to
the pixel. --stacked: the figure's layers (path.series.top, bottom first)
are the running sums of the metrics file's FIELDs at their steps, to the
pixel. --axis-units: every axis label names a unit in parentheses (or is
"step" or "learning rate", which have none). --dom: the file is a browser's
DOM dump (no doctype). Prints what failed and exits 1 on failure."""
import json
import math
import re
import sys
from html.parser import HTMLParser

VOID = {"meta", "br", "img", "input", "link", "hr", "source", "wbr", "area", "base", "col", "embed", "param", "track"}


class Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []
        self.errors = []
        self.figures = {}   # id -> {"svgs": n, "lin": {series: points}, "log": {...}}
        self.fig = None
        self.view = None
        self.text = []
        self.external = []
        self.in_style = False
        self.frames = {}    # (figure, view) -> data-f numbers
        self.paths = []     # (figure, view, class, series, [(x, y)...])
        self.sources = {}   # (figure, series) -> [(x, y)...] of g.smooth-src
        self.cur = None     # "val", "axis", "td": collecting text
        self.vals, self.axes, self.cells = [], [], []
        self.table = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for k, v in attrs:
            v = v or ""
            if k in ("src", "href", "xlink:href", "action", "poster", "srcset"):
                self.external.append(f"<{tag} {k}={v!r}>")
            if re.search(r"(https?|ftp|data|file):|//[a-z0-9]|url\(", v, re.I) and k != "d":
                self.external.append(f"<{tag} {k}={v!r}>")
        if tag not in VOID:
            self.stack.append(tag)
        if tag == "style":
            self.in_style = True
        if tag == "figure" and "plot" in (a.get("class") or "").split():
            self.fig = a.get("id", "")
            if self.fig in self.figures:
                self.errors.append(f"figure id {self.fig!r} twice")
            self.figures[self.fig] = {"svgs": 0, "view-lin": {}, "view-log": {}, "none": {}}
        if tag == "svg" and self.fig is not None:
            self.figures[self.fig]["svgs"] += 1
        if tag == "g" and (a.get("class") or "") in ("view-lin", "view-log"):
            self.view = a["class"]
            self.frames[(self.fig, self.view)] = [float(v) for v in a.get("data-f", "").split()]
        if tag == "g" and a.get("class") == "smooth-src":
            xy = [float(v) for v in (a.get("data-xy") or "").split()]
            self.sources[(self.fig, a.get("data-series"))] = list(zip(xy[0::2], xy[1::2]))
        if tag == "table":
            self.table = a.get("id")
        cls = (a.get("class") or "").split()
        if tag == "text" and "val" in cls:
            self.cur = "val"; self.vals.append("")
        if tag == "text" and "axis-label" in cls:
            self.cur = "axis"; self.axes.append("")
        if tag == "td":
            self.cur = "td"; self.cells.append((self.table, ""))
        for k, v in attrs:
            if k in ("x", "y", "x1", "x2", "y1", "y2", "cx", "cy", "width", "height", "d", "transform", "points") and \
                    re.search(r"nan|inf", v or "", re.I):
                self.errors.append(f"<{tag} {k}={v[:60]!r}>: not a number")
        if tag == "path" and "series" in (a.get("class") or "").split():
            d = a.get("d") or ""
            if not d.strip():
                self.errors.append(f"figure {self.fig!r}: path.series with an empty d")
            pts = len(re.findall(r"[ML]\s*-?[0-9.]+[ ,]-?[0-9.]+", d))
            n = int(a.get("data-n", "-1"))
            if pts != n:
                self.errors.append(f"figure {self.fig!r}: series {a.get('data-series')!r}: d has {pts} points, data-n {n}")
            if self.fig is not None:
                self.figures[self.fig][self.view or "none"][a.get("data-series", "")] = pts
                xy = [(float(p), float(q)) for p, q in re.findall(r"[ML]\s*(-?[0-9.]+)[ ,](-?[0-9.]+)", d)]
                self.paths.append((self.fig, self.view, a.get("class", ""), a.get("data-series", ""), xy))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID and self.stack and self.stack[-1] == tag:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if tag in ("text", "td"):
            self.cur = None
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unbalanced </{tag}> (open: {self.stack[-3:]})")
            if tag in self.stack:
                while self.stack and self.stack.pop() != tag:
                    pass
            return
        self.stack.pop()
        if tag == "style":
            self.in_style = False
        if tag == "figure":
            self.fig = None
        if tag == "g":
            self.view = None

    def handle_data(self, data):
        if self.in_style:
            if re.search(r"url\(|@import|https?:", data):
                self.external.append("style: " + data[:80])
            return
        if self.cur == "val":
            self.vals[-1] += data
        elif self.cur == "axis":
            self.axes[-1] += data
        elif self.cur == "td":
            self.cells[-1] = (self.cells[-1][0], self.cells[-1][1] + data)
        if re.search(r"https?://|ftp://", data):
            self.external.append("text: " + data.strip()[:80])
        self.text.append(data)


def unx(f, px):
    x = f[0] + (px - f[4]) / (f[5] - f[4]) * (f[1] - f[0])
    return 10 ** x if f[8] else x


def toy(f, y):
    v = math.log10(y) if f[9] else y
    return f[7] - ((v - f[2]) / (f[3] - f[2]) if f[3] > f[2] else 0.5) * (f[7] - f[6])


def ema(ys, w):
    out, last, k = [], 0.0, 0
    for y in ys:
        last = last * w + (1 - w) * y
        k += 1
        out.append(last / (1 - w ** k) if w > 0 else last)
    return out


def at_x(f, pts, px):
    """The index of the point of pts (x, y data) nearest to pixel column px."""
    x = unx(f, px)
    return min(range(len(pts)), key=lambda i: abs(pts[i][0] - x))


def check_smoothed(page, fid, series, w, fails):
    src = page.sources.get((fid, series))
    if not src:
        fails.append(f"figure {fid!r}: no raw points for {series!r} (g.smooth-src)")
        return
    sm = ema([y for _, y in src], w)
    views = [(v, p) for (f_, v, c, s_, p) in page.paths if f_ == fid and "smooth" in c.split() and s_ == series + " smoothed"]
    if not views:
        fails.append(f"figure {fid!r}: no curve {series + ' smoothed'!r}")
    for view, pts in views:
        f = page.frames[(fid, view)]
        if not pts:
            fails.append(f"figure {fid!r} {view}: the smoothed curve is empty")
        worst = 0
        for px, py in pts:
            i = at_x(f, src, px)
            worst = max(worst, abs(toy(f, sm[i]) - py))
        if worst > 0.11:
            fails.append(f"figure {fid!r} {view}: {series!r} smoothed with {w} is {worst:.2f} px off the debiased EMA")


def check_stacked(page, fid, spec, fails):
    path, pairs = spec.split(":", 1)
    pairs = [p.split("=", 1) for p in pairs.split(",")]
    rows = {}
    for line in open(path):
        o = json.loads(line)
        if all(field in o for field, _ in pairs):
            rows[o["step"]] = [o[field] or 0 for field, _ in pairs]
    steps = sorted(rows)
    f = page.frames.get((fid, "view-lin"))
    if not f:
        fails.append(f"no stacked figure {fid!r}")
        return
    tops = {s_: p for (f_, v, c, s_, p) in page.paths if f_ == fid and "top" in c.split()}
    for k, (field, name) in enumerate(pairs):
        if name not in tops:
            fails.append(f"figure {fid!r}: no layer {name!r} (have {sorted(tops)})")
            continue
        worst = 0
        for px, py in tops[name]:
            step = min(steps, key=lambda s_: abs(s_ - unx(f, px)))
            worst = max(worst, abs(toy(f, sum(rows[step][:k + 1])) - py))
        if worst > 0.11:
            fails.append(f"figure {fid!r}: layer {name!r} is {worst:.2f} px off the sum of {[p[0] for p in pairs[:k + 1]]}")


def rounded(v):
    """A value label: a number then a unit; a whole number or at most 3 significant digits."""
    m = re.fullmatch(r"(-?[0-9.]+(?:e[-+]?[0-9]+)?) (\D.*)", v.strip())
    if not m:
        return False
    num = m.group(1)
    if re.fullmatch(r"-?[0-9]+", num):
        return True
    digits = re.sub(r"e.*", "", num).replace("-", "").replace(".", "").lstrip("0")
    return len(digits) <= 3


def main():
    args = sys.argv[1:]
    page = Page()
    html = open(args[0], encoding="utf-8").read()
    page.feed(html)
    page.close()
    fails = list(page.errors)
    if page.stack:
        fails.append(f"unclosed tags at the end: {page.stack}")
    if "--dom" not in args and not html.startswith("<!DOCTYPE html>"):
        fails.append("no <!DOCTYPE html>")
    for v in page.vals:
        if not rounded(v):
            fails.append(f"bar value {v!r}: not a rounded number with a unit")
    for table, c in page.cells:
        if re.search(r"\d\.\d{7,}", c):
            fails.append(f"table {table!r}: cell {c.strip()[:60]!r} prints a raw number")
    if page.external:
        fails.append(f"refers outside the file: {page.external[:5]}")
    for fid, f in page.figures.items():
        if f["svgs"] != 1:
            fails.append(f"figure {fid!r} has {f['svgs']} svg elements, expected 1")
    text = " ".join(page.text)
    i = 1
    while i < len(args):
        a = args[i]
        if a == "--text":
            if args[i + 1] not in text:
                fails.append(f"text {args[i + 1]!r} not in the page")
            i += 2
            continue
        if a == "--dom":
            i += 1
            continue
        if a == "--axis-units":
            for lab in page.axes:
                if lab and lab not in ("step", "learning rate") and not re.search(r"\(.+\)$", lab):
                    fails.append(f"axis label {lab!r} has no unit")
            i += 1
            continue
        if a == "--no-text":
            if args[i + 1] in text:
                fails.append(f"text {args[i + 1]!r} should not be in the page")
            i += 2
            continue
        if a == "--smoothed":
            m = re.fullmatch(r"([^:]+):(.*)=([0-9.]+)", args[i + 1])
            check_smoothed(page, m.group(1), m.group(2), float(m.group(3)), fails)
            i += 2
            continue
        if a == "--stacked":
            fid, spec = args[i + 1].split("=", 1)
            check_stacked(page, fid, spec, fails)
            i += 2
            continue
        if a == "--no-figure":
            if args[i + 1] in page.figures:
                fails.append(f"figure {args[i + 1]!r} should not be there")
            i += 2
            continue
        m = re.fullmatch(r"([^:]+):(.*)=(\d+)", a)
        if not m:
            fails.append(f"bad expectation {a!r}")
        else:
            fid, series, n = m.group(1), m.group(2), int(m.group(3))
            if fid not in page.figures:
                fails.append(f"no figure {fid!r} (have {sorted(page.figures)})")
            else:
                lin = page.figures[fid]["view-lin"]
                if series not in lin:
                    fails.append(f"figure {fid!r}: no series {series!r} (have {sorted(lin)})")
                elif lin[series] != n:
                    fails.append(f"figure {fid!r}: series {series!r} has {lin[series]} points, expected {n}")
        i += 1
    for f in fails:
        print("FAIL:", f)
    if not fails:
        print(f"page ok: {len(page.figures)} figures")
    sys.exit(1 if fails else 0)


main()
