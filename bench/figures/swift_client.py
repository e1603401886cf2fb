# SPDX-License-Identifier: Apache-2.0
"""Figures 4 and 9: the Swift client (localauth-bench) against our daemon: canEvaluatePolicy and
status (4); a right's secret released by a finger beside a plain evaluatePolicy (9)."""
import json

from common import PRINT_ID, log, timed


def can_evaluate_and_status(bench):
    """4: canEvaluatePolicy through LAContext (a new connection each), status on one connection."""
    log("figure 4: canEvaluatePolicy / status through the Swift client ...")
    for key, cmd in (("4 canEvaluatePolicy (LAContext)", "can-evaluate"),
                     ("4 status (one connection)", "status")):
        _, out = timed([bench.bench_bin, cmd, str(bench.args.swift_runs)], bench.ours.env(), cmd)
        bench.record(key, "localauth", json.loads(out)["samples_ns"])


def secret_after_finger(bench):
    """9: LASecret.loadData (one RIGHT_USE: the evaluation, then the secret), beside a plain
    evaluatePolicy with the same finger."""
    log("figure 9: LASecret.loadData after a finger, beside evaluatePolicy ...")
    for key, cmd in (("9 LASecret.loadData after a finger", "secret"),
                     ("9 evaluatePolicy after a finger (LAContext)", "evaluate")):
        _, out = timed([bench.bench_bin, cmd, str(bench.args.swift_runs), PRINT_ID],
                       bench.ours.env(), cmd)
        samples = json.loads(out)["samples_ns"]
        bench.ours.auths += len(samples)
        bench.record(key, "localauth", samples)
