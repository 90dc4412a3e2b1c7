#!/usr/bin/env python3
"""Checks a `hyperpar report` page from its DOM (python's html.parser).

usage: report_check.py PAGE.html [FIGURE_ID:SERIES=POINTS ...] [--text TEXT ...] [--no-figure ID ...]

Always checks that the page parses as HTML (tags balanced inside <svg>),
that every figure.plot holds exactly one <svg>, that every path.series has a
non-empty d whose point count equals its data-n, and that nothing refers to
anything outside the file (no URL scheme, no src/href, no url(), no @import).
FIGURE_ID:SERIES=POINTS: that figure's linear view has a curve SERIES (its
data-series; "" for an unnamed one) with exactly POINTS points. --text:
the page's text contains TEXT. Prints what failed and exits 1 on failure."""
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

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID and self.stack and self.stack[-1] == tag:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in VOID:
            return
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
        if re.search(r"https?://|ftp://", data):
            self.external.append("text: " + data.strip()[:80])
        self.text.append(data)


def main():
    args = sys.argv[1:]
    page = Page()
    html = open(args[0], encoding="utf-8").read()
    page.feed(html)
    page.close()
    fails = list(page.errors)
    if page.stack:
        fails.append(f"unclosed tags at the end: {page.stack}")
    if not html.startswith("<!DOCTYPE html>"):
        fails.append("no <!DOCTYPE html>")
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
