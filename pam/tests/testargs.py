# SPDX-License-Identifier: Apache-2.0
"""The command lines of the PAM module's test programs."""

import argparse


def module_arguments(*required):
    """An argument parser with --module (the built module) and each of REQUIRED (--bin, the
    daemon's directory; --client; --shim …), all required; the program adds its own."""
    ap = argparse.ArgumentParser()
    for name in ("--module",) + required:
        ap.add_argument(name, required=True)
    return ap
