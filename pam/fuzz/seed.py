# SPDX-License-Identifier: Apache-2.0
"""Writes seed corpora for the fuzz targets: one file per golden vector, and argument lists."""
import os
import sys

golden, wire_dir, options_dir = sys.argv[1:4]
os.makedirs(wire_dir, exist_ok=True)
os.makedirs(options_dir, exist_ok=True)
with open(golden) as f:
    for line in f:
        if line.startswith("#") or " " not in line:
            continue
        name, hexbytes = line.split(None, 1)
        with open(os.path.join(wire_dir, name), "wb") as out:
            out.write(bytes.fromhex(hexbytes.strip()))
seeds = {
    "defaults": b"",
    "all": b"socket=/run/localauthd/socket\0policy=owner\0timeout=30\0tries=3\0reason=sudo\0debug",
    "bad": b"timeout=0\0tries=9\0socket=rel\0policy=x\0reason=\xff\0unknown",
    "long": b"socket=/" + b"a" * 120 + b"\0reason=" + b"r" * 1030,
}
for name, data in seeds.items():
    with open(os.path.join(options_dir, name), "wb") as out:
        out.write(data)
