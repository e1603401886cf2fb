# SPDX-License-Identifier: Apache-2.0
"""Figures 1 and 2: pam_authenticate through bench_client, a matching finger and another one;
figure 10's pam_fprintd.so runs use `record_phases` too."""
import sys

from common import PAM_SUCCESS, PRINT_ID, STRANGER, log

PHASES = (("total_ns", "total"), ("prompt_ns", "start_to_prompt"), ("result_ns", "prompt_to_result"))


def record_phases(bench, prefix, side, runs):
    """One entry per phase of a run (total, start to prompt, prompt to result)."""
    for key, label in PHASES:
        bench.record(prefix + label, side, [x[key] for x in runs])


def match(bench):
    """1: matching finger; the first run of every block (pam_start's module load, lazy binding)
    is left out."""
    a = bench.args
    blocks, per_block = a.blocks, a.runs // a.blocks
    log("figure 1: pam_authenticate, matching finger (%d x %d runs each) ..." % (blocks, per_block))
    rows = bench.interleaved(blocks, lambda s: s.client(per_block + 1, [(s.match, PRINT_ID)])[1:])
    for side in bench.sides:
        r = sum(rows[side.name], [])
        bad = [x for x in r if x["rc"] != PAM_SUCCESS]
        if bad:
            sys.exit("%s: matching runs failed: %s" % (side.name, bad[0]))
        record_phases(bench, "1 match ", side.name, r)
        bench.results["1 match total"][side.name]["messages"] = r[0]["messages"]


def no_match(bench):
    """2: another finger, one try; every miss is followed by an untimed match so that our lockout
    (5 consecutive misses) never trips; the same for both."""
    a = bench.args
    blocks, per_block = a.blocks, a.runs // a.blocks
    log("figure 2: pam_authenticate, non-matching finger ...")
    rows = bench.interleaved(blocks, lambda s: s.client(
        2 * (per_block + 1), [(s.nomatch, STRANGER), (s.match, PRINT_ID)])[2:])
    for side in bench.sides:
        r = sum(rows[side.name], [])
        misses, matches = r[0::2], r[1::2]
        if any(x["rc"] == PAM_SUCCESS for x in misses) or any(
                x["rc"] != PAM_SUCCESS for x in matches):
            sys.exit("%s: no-match phase: unexpected codes" % side.name)
        record_phases(bench, "2 no-match ", side.name, misses)
        bench.results["2 no-match total"][side.name]["pam_codes"] = sorted({x["rc"] for x in misses})
        bench.results["2 no-match total"][side.name]["messages"] = misses[0]["messages"]
