# SPDX-License-Identifier: Apache-2.0
"""The table `make bench` prints for figures 1 to 10, each goal of issue 29 beside what was
measured (also for bench/boot.py's booted system), the budgets of issues 7 and 18, and the
memory floor (figures/memory_floor.py; figures/growth.py prints its own)."""


def goals(r):
    """(goal, what was measured, met?) for each goal of issue 29, from a results dict of
    bench.py or boot.py (figures a run did not take are left out; None: reported, not a goal)."""
    out = []

    def med(key, side):
        e = r.get(key, {}).get(side)
        return e["median"] if e and e.get("n") else None

    def ratio(text, key, factor, theirs_key=None, theirs_side="fprintd"):
        ours, theirs = med(key, "localauth"), med(theirs_key or key, theirs_side)
        if ours is None or theirs is None:
            return
        out.append((text, "%.3f / %.3f ms = %.3f" % (ours, theirs, ours / theirs),
                    ours <= theirs * factor))
    ratio("pam_authenticate match (socket) <= 0.2 of fprintd's", "1 match total", 0.2)
    ratio("  its prompt -> result <= 2x fprintd's", "1 match prompt_to_result", 2)
    ratio("pam_fprintd through our D-Bus door <= 0.5 of fprintd's", "10 pam_fprintd match total", 0.5)
    ratio("  its prompt -> result <= 2x fprintd's (as the socket)",
          "10 pam_fprintd match prompt_to_result", 2)
    ratio("cold start (first list, daemon not running) <= 0.5", "5 cold start (list)", 0.5)
    ratio("list, whole process, daemon running <= 1/3", "6 list (warm)", 1 / 3)
    mem = r.get("rss_kb", {})
    idle = mem.get("localauth", {}).get("idle after start")
    theirs = mem.get("fprintd", {}).get("idle after start")
    if idle:
        out.append(("idle RSS <= 12 MB", "%.1f MB (fprintd %s)" % (
            idle["rss_kb"] / 1024, "%.1f MB" % (theirs["rss_kb"] / 1024) if theirs else "-"),
            idle["rss_kb"] <= 12 * 1024))
    if idle and theirs:
        o, t = idle["private_dirty_kb"] or 0, theirs["private_dirty_kb"] or 0
        out.append(("idle private dirty <= fprintd's", "%.2f / %.2f MB" % (o / 1024, t / 1024),
                    o <= t))
        o, t = idle["pss_kb"] or 0, theirs["pss_kb"] or 0
        out.append(("idle PSS (reported; not a goal)", "%.2f / %.2f MB" % (o / 1024, t / 1024),
                    None))
    back = mem.get("localauth", {}).get("10 s after the burst")
    if idle and back:
        peak = mem["localauth"].get("right after the burst", back)
        out.append(("10 s after the 1000-client burst: RSS <= idle + 1 MB",
                    "%+.2f MB (%+.2f right after)" % ((back["rss_kb"] - idle["rss_kb"]) / 1024,
                                                      (peak["rss_kb"] - idle["rss_kb"]) / 1024),
                    back["rss_kb"] - idle["rss_kb"] <= 1024))
    floor = r.get("7 floor", {})
    ours_maps = floor.get("by mapping", {}).get("localauth")

    def short(name):
        return (name.replace("our executable", "exe").replace("Swift: ", "")
                .replace("[section ", "").replace(", no symbol]", "").split(" (")[0][:14])
    if ours_maps:
        exe = sum(g["Rss"] for n, g in ours_maps.items() if n.startswith("our executable"))
        total = sum(g["Rss"] for g in ours_maps.values())
        top = sorted(((n, g["Private_Dirty"]) for n, g in ours_maps.items()), key=lambda kv: -kv[1])
        out.append(("  floor: RSS without our executable's pages", "%.1f MB (exe %.1f of %.1f)" % (
            (total - exe) / 1024, exe / 1024, total / 1024), None))
        out.append(("  floor: private dirty by mapping (MB)", ", ".join(
            "%s %.2f" % (short(n), v / 1024) for n, v in top[:3]), None))
    e = floor.get("executable") or {}
    if e.get("resident_bytes_by_module"):
        top = list(e["resident_bytes_by_module"].items())[:4]
        out.append(("  floor: exe's resident pages by module (MB)", ", ".join(
            "%s %.1f" % (short(n), b / 2**20) for n, b in top), None))
    if e.get("written_bytes_by_module"):
        top = list(e["written_bytes_by_module"].items())[:4]
        out.append(("  floor: exe's written pages by module (MB)", ", ".join(
            "%s %.2f" % (short(n), b / 2**20) for n, b in top), None))
    return out


def print_goals(gs, title="issue 29's goals (medians, ours / fprintd's, one run)"):
    print("\n" + title)
    for text, measured, met in gs:
        print("%-58s %-44s %s" % (text, measured, "-" if met is None else "met" if met else "NOT MET"))


def budgets(r):
    """(budget, what was measured, met?) for each budget of issues 7 and 18."""
    def med(key, side):
        return r[key][side]["median"]
    out = []

    def ratio(text, key, factor):
        ours, theirs = med(key, "localauth"), med(key, "fprintd")
        out.append((text, "%.3f vs %.3f ms (ratio %.3f)" % (ours, theirs, ours / theirs),
                    ours <= theirs * factor))
    ratio("1: pam_authenticate match median <= 1/10 of fprintd's", "1 match total", 0.1)
    prompt = med("1 match start_to_prompt", "localauth")
    out.append(("1: start -> prompt median <= 0.5 ms", "%.3f ms" % prompt, prompt <= 0.5))
    ratio("3: pamtester median <= 1/2 of fprintd's", "3 pamtester match", 0.5)
    ratio("5: cold start median <= 1/2 of fprintd's", "5 cold start (list)", 0.5)
    ratio("6: list, whole process, median <= 1/3 of fprintd-list's", "6 list (warm)", 1 / 3)
    mem = r["rss_kb"]
    idle = {s: mem[s]["idle after start"]["rss_kb"] for s in mem}
    out.append(("7: idle RSS <= 12 MB", "%.1f MB (fprintd %.1f MB)" % (
        idle["localauth"] / 1024, idle["fprintd"] / 1024), idle["localauth"] <= 12 * 1024))
    for field, name in (("pss_kb", "PSS"), ("private_dirty_kb", "private dirty")):
        o = mem["localauth"]["idle after start"][field] or 0
        t = mem["fprintd"]["idle after start"][field] or 0
        out.append(("7: idle %s <= fprintd's" % name, "%.1f vs %.1f MB" % (o / 1024, t / 1024),
                    o <= t))
    if "10 s after the burst" in mem["localauth"]:
        peak = mem["localauth"]["right after the burst"]["rss_kb"]
        back = mem["localauth"]["10 s after the burst"]["rss_kb"]
        out.append(("7: 10 s after the burst, RSS within +1 MB of idle", "%+.2f MB (%+.2f MB right "
                    "after)" % ((back - idle["localauth"]) / 1024, (peak - idle["localauth"]) / 1024),
                    back - idle["localauth"] <= 1024))
    if "8a verify, burst" in r:
        v = r["8a verify, burst"]["localauth"]
        out.append(("8a: verify during the burst <= 5 ms (max)", "%.3f ms median, %.3f max (n %d)" % (
            v["median"], v["max"], v["n"]), v["max"] <= 5))
    after = [k for k in mem["localauth"] if k.startswith("after ") and "authentications" in k][0]
    growth = mem["localauth"][after]["rss_kb"] - idle["localauth"]
    later = mem["localauth"][after]["rss_kb"] - mem["localauth"]["after figure 1"]["rss_kb"]
    out.append(("7: RSS growth after 1000 authentications < 1 MB", "%+.2f MB (of which %+.2f MB "
                "after the first %d)" % (growth / 1024, later / 1024,
                                         mem["localauth"]["after figure 1"]["auths"]),
                growth < 1024))
    for key in ("8a status, burst", "8b status, paced"):
        p99 = r[key]["localauth"]["p99"]
        out.append(("%s: p99 < 5 ms" % key, "%.3f ms" % p99, p99 < 5))
    if "8d verify, burst, 1000 uids" in r:
        v = r["8d verify, burst, 1000 uids"]["localauth"]
        h = r["8d heavy uid's status, burst"]["localauth"]
        out.append(("8d: verify, burst of 1000 uids <= 5 ms (median)", "%.3f ms median, %.3f max (n %d)" % (
            v["median"], v["max"], v["n"]) if v["n"] else "no verify finished during the burst",
            v["n"] > 0 and v["median"] <= 5))
        out.append(("8d: the heavy uid held to its 32 connections", "%d of %d refused; %d answered" % (
            h["refused"], h["connections"], h["n"]), h["refused"] == max(0, h["connections"] - 32)))
    if "8c status, burst, floor (C server)" in r:
        floor = r["8c status, burst, floor (C server)"]["localauth"]
        ours = r["8a status, burst"]["localauth"]
        out.append(("8a status, burst: p99 vs the floor (C server)", "%.3f vs %.3f ms (%.1fx)" % (
            ours["p99"], floor["p99"], ours["p99"] / floor["p99"]), None))
    return out


def print_table(r, info):
    print("localauth vs fprintd, %s; %s, %d CPUs, kernel %s; load %.2f before, %.2f after" % (
        info["date"], info["machine"]["cpu"], info["machine"]["cpus"], info["machine"]["kernel"],
        info["machine"]["loadavg_before"][0], info["machine"]["loadavg_after"][0]))
    print("times in ms: median [min / p95 / max] (n); ratio = ours / theirs (medians)\n")
    print("%-34s %-36s %-36s %7s" % ("figure", "localauth", "fprintd", "ratio"))

    def cell(s):
        if not s:
            return "-"
        return "%.3f [%.3f/%.3f/%.3f] (%d)" % (s["median"], s["min"], s["p95"], s["max"], s["n"])
    for key, sides in r.items():
        if key in ("rss_kb", "growth", "7 floor", "11 verify anatomy") or key.startswith("5b "):
            continue
        ours, theirs = sides.get("localauth"), sides.get("fprintd")
        ratio = "%.3f" % (ours["median"] / theirs["median"]) if ours and theirs else "-"
        print("%-34s %-36s %-36s %7s" % (key, cell(ours), cell(theirs), ratio))
        if "p99" in (ours or {}):
            print("%-34s p99 %.3f ms; %d clients x %d requests, %s, %.0f ms wall" % (
                "", ours["p99"], ours["clients"], ours["rounds"], "%g/s in all" % ours["rate"]
                if ours["rate"] else "all at once", ours["wall_ms"]))
    for key in (k for k in r if k.startswith("5b ")):
        print("\n" + key)
        for name, v in sorted(r[key].items(), key=lambda kv: kv[1]["median"]):
            print("  %-34s %.3f [%.3f / %.3f] (%d)" % (name, v["median"], v["min"], v["max"], v["n"]))
    print()
    mem = r["rss_kb"]
    for label in mem["localauth"]:
        o, t = mem["localauth"][label], mem["fprintd"][label]
        print("%-34s %-36s %-36s %7.3f" % (
            "7 RSS " + label, "%.1f MB (PSS %.1f, dirty %.1f; %d auths)" % (
                o["rss_kb"] / 1024, (o["pss_kb"] or 0) / 1024,
                (o["private_dirty_kb"] or 0) / 1024, o["auths"]),
            "%.1f MB (PSS %.1f, dirty %.1f; %d auths)" % (
                t["rss_kb"] / 1024, (t["pss_kb"] or 0) / 1024,
                (t["private_dirty_kb"] or 0) / 1024, t["auths"]), o["rss_kb"] / t["rss_kb"]))
    print()
    for text, measured, met in info["budgets"]:
        print("%-56s %-42s %s" % (text, measured, "-" if met is None else "met" if met else "NOT MET"))
