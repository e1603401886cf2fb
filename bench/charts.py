#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""SVG charts of a `make bench` run, written by hand (no plotting package).

  ratios.svg  every side-by-side time: ours / fprintd's median (the dot), with the spread of ours
              against their median (the bar: our min to our p95), on a log scale, the goal marked
  memory.svg  idle RSS, PSS and private dirty memory, and RSS around the 1000-client burst

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
