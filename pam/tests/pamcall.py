# SPDX-License-Identifier: Apache-2.0
"""One pam_authenticate through pypamtest, run under pam_wrapper by integration.py.

Usage: pamcall.py SERVICE USER EXPECTED_CODE FLAGS [PASSCODE...]
Prints one JSON line: code, info, errors (None when the code was not the expected one, as
pypamtest then keeps no messages), start and end (time.monotonic()).
"""
import json
import re
import sys
import time

import pypamtest

service, user, expected, flags = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
answers = sys.argv[5:]
out = {"start": time.monotonic()}
case = pypamtest.TestCase(pypamtest.PAMTEST_AUTHENTICATE, expected, flags)
try:
    res = pypamtest.run_pamtest(user, service, [case], answers)
    out.update(code=expected, info=list(res.info), errors=list(res.errors))
except pypamtest.PamTestError as e:
    m = re.search(r"returned \[(-?\d+)\]", str(e))
    out.update(code=int(m.group(1)) if m else -1, info=None, errors=None, why=str(e))
out["end"] = time.monotonic()
print(json.dumps(out))
