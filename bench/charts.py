#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""SVG charts of a `make bench` run, written by hand (no plotting package).

  ratios.svg  every side-by-side time: ours / fprintd's median (the dot), with the spread of ours
              against their median (the bar: our min to our p95), on a log scale, the goal marked
  memory.svg  idle RSS, PSS and private dirty memory, and RSS around the 1000-client burst
  growth.svg  how cost grows (bench.py's growth phase): start-up, list, status and memory over 1 to
              1000 enrolled users; verify over 1 to 10 fingers and the enrolment's duplicate check
              over 1 to 50 prints; medians, ours beside fprintd's, log scales

`make bench` calls write_charts(); alone: /usr/bin/python3 bench/charts.py [JSON] [OUTDIR]
(default bench/results/latest.json into docs/performance/).
"""
import json
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OURS, THEIRS = "#1f6feb", "#8c8c8c"
GOOD, BAD = "#1a7f37", "#cf222e"
# figure -> the goal as a ratio of fprintd's median (issues 7 and 18)
GOALS = {"1 match total": 0.1, "3 pamtester match": 0.5, "5 cold start (list)": 0.5,
         "6 list (warm)": 1 / 3}


def esc(text):
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def svg(width, height, body):
    return ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
            'font-family="sans-serif" font-size="12">\n<rect width="100%%" height="100%%" '
            'fill="white"/>\n%s</svg>\n' % (width, height, width, height, "\n".join(body)))


def ratios_chart(results, title):
    rows = [(k, v) for k, v in results.items()
            if k != "rss_kb" and isinstance(v, dict) and "localauth" in v and "fprintd" in v]
    left, right, top, row_h = 260, 40, 50, 28
    width, height = 820, top + row_h * len(rows) + 60
    lo, hi = 0.01, 30.0
    plot_w = width - left - right

    def x(ratio):
        ratio = min(max(ratio, lo), hi)
        return left + plot_w * (math.log10(ratio) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
    body = ['<text x="10" y="20" font-size="14" font-weight="bold">%s</text>' % esc(title),
            '<text x="10" y="38" fill="#555">ours / fprintd\'s median (dot); bar: our min to p95 '
            'over their median; | goal; log scale</text>']
    for tick in (0.01, 0.03, 0.1, 0.3, 1, 3, 10, 30):
        body.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>' % (
            x(tick), top - 5, x(tick), top + row_h * len(rows), "#999" if tick == 1 else "#eee"))
        body.append('<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%g</text>' % (
            x(tick), top + row_h * len(rows) + 16, tick))
    for i, (key, sides) in enumerate(rows):
        o, t = sides["localauth"], sides["fprintd"]
        y = top + row_h * i + row_h / 2
        r = o["median"] / t["median"]
        goal = GOALS.get(key)
        color = OURS if goal is None else (GOOD if r <= goal else BAD)
        body.append('<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>' % (
            left - 10, y, esc(key)))
        body.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="6" '
                    'stroke-opacity="0.35"/>' % (x(o["min"] / t["median"]), y,
                                                 x(o["p95"] / t["median"]), y, color))
        body.append('<circle cx="%.1f" cy="%.1f" r="5" fill="%s"/>' % (x(r), y, color))
        body.append('<text x="%.1f" y="%.1f" dx="8" dy="-7" fill="%s">%.3f</text>' % (x(r), y, color, r))
        if goal is not None:
            body.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black" '
                        'stroke-width="2"/>' % (x(goal), y - 9, x(goal), y + 9))
    return svg(width, height, body)


def memory_chart(results, title):
    mem = results["rss_kb"]
    bars = []
    idle_o, idle_t = mem["localauth"]["idle after start"], mem["fprintd"]["idle after start"]
    for field, label in (("rss_kb", "idle RSS"), ("pss_kb", "idle PSS"),
                         ("private_dirty_kb", "idle private dirty")):
        bars.append((label, (idle_o.get(field) or 0) / 1024, (idle_t.get(field) or 0) / 1024))
    for label in ("right after the burst", "10 s after the burst", "at the end"):
        if label in mem["localauth"]:
            bars.append(("RSS " + label, mem["localauth"][label]["rss_kb"] / 1024, None))
    left, top, row_h, width = 220, 50, 34, 820
    height = top + row_h * len(bars) + 50
    top_mb = max(max(o, t or 0) for _, o, t in bars) * 1.1
    scale = (width - left - 80) / top_mb
    body = ['<text x="10" y="20" font-size="14" font-weight="bold">%s</text>' % esc(title),
            '<text x="10" y="38" fill="#555">MB; blue: localauthd, grey: fprintd; | the goal '
            '(12 MB idle RSS; fprintd\'s PSS and dirty; idle + 1 MB after the burst)</text>']
    goals = {"idle RSS": 12, "idle PSS": (idle_t.get("pss_kb") or 0) / 1024,
             "idle private dirty": (idle_t.get("private_dirty_kb") or 0) / 1024,
             "RSS 10 s after the burst": idle_o["rss_kb"] / 1024 + 1}
    for i, (label, o, t) in enumerate(bars):
        y = top + row_h * i
        body.append('<text x="%d" y="%d" text-anchor="end" dominant-baseline="middle">%s</text>' % (
            left - 10, y + 12, esc(label)))
        body.append('<rect x="%d" y="%d" width="%.1f" height="12" fill="%s"/>' % (
            left, y + 1, o * scale, OURS))
        body.append('<text x="%.1f" y="%d" dx="4" dominant-baseline="middle">%.1f</text>' % (
            left + o * scale, y + 7, o))
        if t is not None:
            body.append('<rect x="%d" y="%d" width="%.1f" height="12" fill="%s"/>' % (
                left, y + 15, t * scale, THEIRS))
            body.append('<text x="%.1f" y="%d" dx="4" dominant-baseline="middle">%.1f</text>' % (
                left + t * scale, y + 21, t))
        if label in goals:
            gx = left + goals[label] * scale
            body.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black" '
                        'stroke-width="2"/>' % (gx, y - 2, gx, y + 30))
    return svg(width, height, body)


def line_panel(x0, y0, w, h, title, unit, series, xs_label):
    """One panel: each series (label, colour, dashed?, [(x, y)...]) on log x and log y axes."""
    points = [pt for _, _, _, pts in series for pt in pts if pt[1] and pt[1] > 0]
    if not points:
        return ['<text x="%d" y="%d">%s: no data</text>' % (x0, y0 + 20, esc(title))]
    xlo, xhi = min(p[0] for p in points), max(p[0] for p in points)
    ylo = 10 ** math.floor(math.log10(min(p[1] for p in points)))
    yhi = 10 ** math.ceil(math.log10(max(p[1] for p in points)))
    if xhi == xlo:
        xhi = xlo * 10
    left, bottom = x0 + 60, y0 + h - 40
    pw, ph = w - 80, h - 80

    def px(v):
        return left + pw * (math.log10(v) - math.log10(xlo)) / (math.log10(xhi) - math.log10(xlo))

    def py(v):
        return bottom - ph * (math.log10(v) - math.log10(ylo)) / (math.log10(yhi) - math.log10(ylo))
    body = ['<text x="%d" y="%d" font-weight="bold">%s</text>' % (x0 + 10, y0 + 18, esc(title))]
    decade = ylo
    while decade <= yhi * 1.0001:
        for m in (1, 2, 5):
            v = decade * m
            if ylo <= v <= yhi * 1.0001:
                body.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>' % (
                    left, py(v), left + pw, py(v), "#ccc" if m == 1 else "#eee"))
                body.append('<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle" '
                            'fill="#555">%g</text>' % (left - 5, py(v), v))
        decade *= 10
    for v in sorted({p[0] for p in points}):
        body.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>' % (
            px(v), bottom, px(v), bottom - ph))
        body.append('<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%g</text>' % (
            px(v), bottom + 15, v))
    body.append('<text x="%d" y="%d" text-anchor="middle" fill="#555">%s</text>' % (
        left + pw / 2, bottom + 32, esc(xs_label)))
    body.append('<text x="%d" y="%d" fill="#555" transform="rotate(-90 %d %d)" '
                'text-anchor="middle">%s</text>' % (x0 + 14, bottom - ph / 2, x0 + 14,
                                                     bottom - ph / 2, esc(unit)))
    for i, (label, colour, dashed, pts) in enumerate(series):
        pts = [p for p in pts if p[1] and p[1] > 0]
        if not pts:
            continue
        body.append('<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>' % (
            colour, ' stroke-dasharray="5,4"' if dashed else "",
            " ".join("%.1f,%.1f" % (px(x), py(y)) for x, y in pts)))
        for x, y in pts:
            body.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (px(x), py(y), colour))
        ly = y0 + 36 + 15 * i
        body.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>' % (
            left + 8, ly, left + 30, ly, colour, ' stroke-dasharray="5,4"' if dashed else ""))
        body.append('<text x="%d" y="%d" dominant-baseline="middle">%s</text>' % (
            left + 36, ly, esc(label)))
    return body


def growth_chart(g, title):
    """Four panels from results["growth"]: times over users, memory over users, verify over
    fingers, the duplicate check over prints."""
    users = sorted(g["users"], key=int)

    def over(part, key, side, keys):
        return [(int(n), (g[part][n].get(key, {}).get(side) or {}).get("median")) for n in keys]
    times = []
    for key, dashed in (("cold start (list)", False), ("list (warm)", True),
                        ("status (warm)", None)):
        for side, colour in (("localauth", OURS), ("fprintd", THEIRS)):
            if key == "status (warm)" and side == "fprintd":
                continue
            times.append(("%s, %s" % (key, side), colour if dashed is not None else "#9a6700",
                          bool(dashed), over("users", key, side, users)))
    memory = []
    for field, when, dashed in (("rss_kb", "after requests", False),
                                ("pss_kb", "after requests", True)):
        for side, colour in (("localauth", OURS), ("fprintd", THEIRS)):
            memory.append(("%s %s, %s" % ("RSS" if field == "rss_kb" else "PSS", when, side),
                           colour, dashed, [(int(n), (g["users"][n]["memory"][side][when][field]
                                                      or 0) / 1024) for n in users]))
    fingers = sorted(g["fingers"], key=int)
    gallery = sorted(g["gallery"], key=int)
    verify, dup = [], []
    for outcome, dashed in (("no match", False), ("match", True)):
        for side, colour in (("localauth", OURS), ("fprintd", THEIRS)):
            verify.append(("%s, %s" % (outcome, side), colour, dashed, over(
                "fingers", "verify (identify), " + outcome, side, fingers)))
            dup.append(("%s, %s" % (outcome, side), colour, dashed, over(
                "gallery", "enrol duplicate check, " + outcome, side, gallery)))
    width, ph = 960, 330
    body = ['<text x="10" y="20" font-size="14" font-weight="bold">%s</text>' % esc(title),
            '<text x="10" y="38" fill="#555">medians; blue: localauthd, grey: fprintd; log '
            'scales (docs/performance.md, "How cost grows")</text>']
    body += line_panel(0, 50, width // 2, ph, "start-up, list, status (whole processes)", "ms",
                       times, "enrolled users")
    body += line_panel(width // 2, 50, width // 2, ph, "daemon memory after a list (and status) "
                       "of every user", "MB", memory, "enrolled users")
    body += line_panel(0, 50 + ph, width // 2, ph, "verify (identify over one account), scan "
                       "to answer", "ms", verify, "enrolled fingers of the account")
    body += line_panel(width // 2, 50 + ph, width // 2, ph, "enrolment's duplicate check (all "
                       "accounts), scan to answer", "ms", dup,
                       "enrolled prints, all accounts")
    return svg(width, 50 + 2 * ph + 10, body)


def write_charts(results, info, outdir):
    os.makedirs(outdir, exist_ok=True)
    when = "%s, git %s, load %.2f to %.2f" % (
        info.get("date", "?"), info.get("git_head", "?")[:7],
        info["machine"]["loadavg_before"][0], info["machine"].get("loadavg_after", [0])[0])
    written = []
    for name, text in (("ratios.svg", ratios_chart(results, "localauth vs fprintd: " + when)),
                       ("memory.svg", memory_chart(results, "memory: " + when))):
        path = os.path.join(outdir, name)
        with open(path, "w") as f:
            f.write(text)
        written.append(path)
    g = results.get("growth")
    if g and "skipped" not in g and "failed" not in g:
        path = os.path.join(outdir, "growth.svg")
        with open(path, "w") as f:
            f.write(growth_chart(g, "how cost grows: " + when))
        written.append(path)
    return written


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "bench", "results", "latest.json")
    outdir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "docs", "performance")
    with open(path) as f:
        data = json.load(f)
    for p in write_charts(data["results"], data, outdir):
        print(p)


if __name__ == "__main__":
    main()
