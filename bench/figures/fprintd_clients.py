# SPDX-License-Identifier: Apache-2.0
"""Figure 10: fprintd's clients against both daemons: pam_fprintd.so (the same bench_client, PAM
service and reader driver) and fprintd-list, through fprintd and through localauthd's D-Bus door,
interleaved."""
import sys

from common import PAM_SUCCESS, PRINT_ID, log, timed
from figures.pam_authenticate import record_phases


def through_the_door(bench):
    a = bench.args
    blocks, per_block = a.blocks, a.runs // a.blocks
    log("figure 10: pam_fprintd.so and fprintd-list through localauthd's D-Bus door and fprintd ...")
    dbus = bench.over_dbus
    dbus.start()
    dbus.enrol()
    pair = (dbus, bench.theirs)
    rows = bench.interleaved(blocks, lambda s: s.client(per_block + 1, [(s.match, PRINT_ID)])[1:],
                             sides=pair)
    for side, label in ((dbus, "localauth"), (bench.theirs, "fprintd")):
        r = sum(rows[side.name], [])
        if any(x["rc"] != PAM_SUCCESS for x in r):
            sys.exit("%s: pam_fprintd matching runs failed: %s" % (side.name, r[0]))
        record_phases(bench, "10 pam_fprintd match ", label, r)
    out = bench.interleaved(a.process_runs + 1,
                            lambda s: timed(s.list_cmd(), s.env(), "fprintd-list")[0], sides=pair)
    bench.record("10 fprintd-list (warm)", "localauth", out[dbus.name][1:])
    bench.record("10 fprintd-list (warm)", "fprintd", out[bench.theirs.name][1:])
