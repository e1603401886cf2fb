# SPDX-License-Identifier: Apache-2.0
"""Figures 3, 5 and 6: a whole process timed from its start: pamtester (3), the first `list`
with the daemon not running (5, cold start), `list` with it running (6)."""
import statistics

from common import PRINT_ID, log, timed


def pamtester(bench):
    """3: pamtester, one process per authentication."""
    a = bench.args
    log("figure 3: pamtester, matching finger (%d runs each) ..." % a.process_runs)
    out = bench.interleaved(a.process_runs + 1, lambda s: s.pamtester(s.match, PRINT_ID))
    for side in bench.sides:
        bench.record("3 pamtester match", side.name, out[side.name][1:])


def list_warm(bench):
    """6: list, daemon running."""
    a = bench.args
    log("figure 6: list as a whole process (%d runs each) ..." % a.process_runs)
    out = bench.interleaved(a.process_runs + 1, lambda s: timed(s.list_cmd(), s.env(), "list")[0])
    bench.record("6 list (warm)", "localauth", out["localauth"][1:])
    bench.record("6 list (warm)", "fprintd", out["fprintd"][1:])


def cold_start(bench):
    """5: cold start, last (it stops and starts fprintd); ours also by phase."""
    a = bench.args
    log("figure 5: cold start (%d runs each) ..." % a.cold_runs)
    out = bench.interleaved(a.cold_runs, lambda s: s.cold_start())
    for side in bench.sides:
        bench.record("5 cold start (list)", side.name, out[side.name])
    phases = {}
    for run in bench.ours.phases:
        for name, ms_ in run.items():
            phases.setdefault(name, []).append(ms_)
    bench.results["5b cold start phases, ms from localauthctl started (ours)"] = {
        name: {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}
        for name, v in phases.items()}
