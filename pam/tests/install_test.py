# SPDX-License-Identifier: Apache-2.0
"""pam-install and pam-uninstall into temporary DESTDIRs, never the live system.

For PREFIX=/usr and PREFIX=/usr/local: install, check the exact file list, the modes, that
the module is the built one and the other files are the sources (the man page gunzipped),
that `man -l` renders the installed page without a groff warning; install again (it must be
idempotent); uninstall, check that only empty directories are left, remove those.

Usage: install_test.py --make "make -f pam/pam.mk" --module SO --multiarch TRIPLET
                       --examples "README.md sudo ..."
The last line is "N passed, N failed"; the exit status is non-zero on any failure.
"""
import argparse
import gzip
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile

PASSED = FAILED = 0


def check(cond, what, detail=""):
    global PASSED, FAILED
    if cond:
        PASSED += 1
        print("ok   %s" % what)
    else:
        FAILED += 1
        print("FAIL %s%s" % (what, (": " + detail) if detail else ""))
    return cond


def tree(root):
    """(files, directories) under root, relative, with a leading slash."""
    files, dirs = set(), set()
    for here, dnames, fnames in os.walk(root):
        rel = "/" + os.path.relpath(here, root) if here != root else ""
        dirs.update(rel + "/" + d for d in dnames)
        files.update(rel + "/" + f for f in fnames)
    return files, dirs


def read(path):
    with open(path, "rb") as f:
        return f.read()


def run_make(args, target, destdir, prefix):
    cmd = shlex.split(args.make) + ["--no-print-directory", target, "DESTDIR=" + destdir,
                                    "PREFIX=" + prefix, "PAM_MULTIARCH=" + args.multiarch]
    return subprocess.run(cmd, capture_output=True, text=True)


def expected(args, prefix):
    files = {
        "/lib/%s/security/pam_localauth.so" % args.multiarch: args.module,
        prefix + "/share/man/man8/pam_localauth.8.gz": "pam/pam_localauth.8",
        "/usr/share/pam-configs/localauth": "pam/pam-configs/localauth",
    }
    for name in args.examples.split():
        files[prefix + "/share/doc/localauth/pam-examples/" + name] = "pam/examples/" + name
    return files


def one_prefix(args, prefix):
    dest = tempfile.mkdtemp(prefix="pam-install-")
    label = "PREFIX=%s: " % prefix
    try:
        want = expected(args, prefix)
        r = run_make(args, "pam-install", dest, prefix)
        if not check(r.returncode == 0, label + "pam-install succeeds", r.stdout + r.stderr):
            return
        files, _ = tree(dest)
        check(files == set(want), label + "exactly the expected files",
              "missing %s, unexpected %s" % (sorted(set(want) - files), sorted(files - set(want))))

        modes = {f: stat.S_IMODE(os.lstat(dest + f).st_mode) for f in files}
        check(all(m == 0o644 for m in modes.values()) and
              all(stat.S_ISREG(os.lstat(dest + f).st_mode) for f in files),
              label + "regular files, mode 0644",
              str({f: oct(m) for f, m in modes.items() if m != 0o644}))
        so = "/lib/%s/security/pam_localauth.so" % args.multiarch
        check(os.path.exists(dest + so) and read(dest + so) == read(args.module),
              label + "the module is the built one (%s)" % args.module)
        same = True
        for f, src in want.items():
            if f.endswith(".so") or not os.path.exists(dest + f):
                continue
            data = read(dest + f)
            if f.endswith(".gz"):
                same &= data[4:8] == b"\0\0\0\0"  # gzip -n: no time stamp
                data = gzip.decompress(data)
            same &= data == read(src)
        check(same, label + "man page, profile and examples are the sources")

        page = dest + prefix + "/share/man/man8/pam_localauth.8.gz"
        env = dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="80", MANPAGER="cat", PAGER="cat")
        r = subprocess.run(["man", "--warnings=w", "-l", page], capture_output=True, text=True,
                           env=env)
        check(r.returncode == 0 and r.stderr == "" and "pam_localauth" in r.stdout
              and "NAME" in r.stdout, label + "man -l renders the installed page, no warnings",
              r.stderr.strip() or "exit %d" % r.returncode)

        r = run_make(args, "pam-install", dest, prefix)
        check(r.returncode == 0 and tree(dest)[0] == set(want),
              label + "installing again changes nothing", r.stderr)

        r = run_make(args, "pam-uninstall", dest, prefix)
        check(r.returncode == 0, label + "pam-uninstall succeeds", r.stdout + r.stderr)
        files, dirs = tree(dest)
        check(files == set(), label + "nothing but directories left", str(sorted(files)))
        check(prefix + "/share/doc/localauth/pam-examples" not in dirs,
              label + "the examples directory is removed")
        for d in sorted(dirs, key=len, reverse=True):
            os.rmdir(dest + d)  # fails, and the test with it, if anything is still inside
        check(os.listdir(dest) == [], label + "only empty directories were left")

        r = run_make(args, "pam-uninstall", dest, prefix)
        check(r.returncode == 0, label + "pam-uninstall of nothing succeeds", r.stderr)
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--make", required=True)
    ap.add_argument("--module", required=True)
    ap.add_argument("--multiarch", required=True)
    ap.add_argument("--examples", required=True)
    args = ap.parse_args()
    if not check(args.multiarch != "", "a multiarch triplet is known"):
        print("%d passed, %d failed" % (PASSED, FAILED))
        return 1
    for prefix in ("/usr", "/usr/local"):
        one_prefix(args, prefix)
    listed = set(args.examples.split())
    on_disk = set(os.listdir("pam/examples"))
    check(listed == on_disk, "every file in pam/examples is installed (PAM_EXAMPLES)",
          "not listed %s, listed but absent %s" % (sorted(on_disk - listed),
                                                   sorted(listed - on_disk)))
    print("%d passed, %d failed" % (PASSED, FAILED))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
