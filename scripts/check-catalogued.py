#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails the build on a line a person reads that is not in the catalogue (make check-catalogued).

    check-catalogued.py [--self-test] [FILE ...]

Reads every string literal of the components that show text to a person (SCOPE below; or the files
given) and reports each one that looks like words ("two words" of letters) and is neither marked for
the catalogue — the template of tr(…), trn(…) or N_(…) — nor in a place that is English by design:
syslog and debug lines of the PAM module, the daemon's logs, the journal and audit records,
identifiers, programmer errors (fatalError, precondition). Such a place says so on the literal's
line (or on a comment line of the two right above it): a log call from ENGLISH_CALLS, or a comment
`// English: why` (C: `/* English: why */`).
Exit 1 with one line per literal.
"""
import argparse
import os
import re
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
# The components whose lines reach a person in their language. The daemon's result and event lines
# are rendered by the clients from the phrase on the wire (Sources/LocalAuthProtocol/Phrase*.swift).
SCOPE = [
    "pam/*.c", "pam/*.h",
    "Sources/localauthctl/*.swift",
    "Sources/LocalAuthClient/*.swift",
    "Sources/LocalAuthentication/*.swift",
    "Sources/LocalAuthLocalization/*.swift",
    "Sources/LocalAuthProtocol/Translation.swift",
    "Sources/LocalAuthProtocol/Phrase*.swift",
]
MARKS = ("tr(", "trn(", "N_(", "said(")
# The daemon's answers: a RESULT or EVENT whose line is a literal would reach every client in
# English. Each carries a Phrase instead (`Phrase.said("…")` marks a catalogue line), or says why not.
DAEMON_SCOPE = [
    "Sources/LocalAuthDaemon/*.swift", "Sources/LocalAuthSocketDoor/*.swift", "Sources/LocalAuthFprintdDoor/*.swift",
]
DAEMON_LITERAL = re.compile(r"\b(RequestResult|Event|Answer)\(\s*\.?\w+\s*,\s*(english:\s*)?\"")
# Calls whose text is English by design: logs, the administrator's syslog, programmer errors.
ENGLISH_CALLS = ("pam_syslog(", "pam_vsyslog(", "debug(", "fatalError(", "precondition(",
                 "preconditionFailure(", "assert(", "assertionFailure(", "logger.", "Logger(",
                 "#expect(", "#require(")
WORDS = re.compile(r"[A-Za-z]{2,}[,.:;!?]?\s+[A-Za-z]{2,}")
ANNOTATION = re.compile(r"(//|/\*)\s*English:")


def literals(text, swift):
    """(start offset, end offset, content) of each string literal, comments skipped."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        if not swift and c == "'":
            j = i + 1
            while j < n and text[j] != "'":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if swift and (text.startswith('#"', i) or text.startswith('##"', i)):
            hashes = len(text[i:]) - len(text[i:].lstrip("#"))
            quote = '"""' if text.startswith('"""', i + hashes) else '"'
            close = quote + "#" * hashes
            j = text.find(close, i + hashes + len(quote))
            j = n if j < 0 else j
            yield i, j + len(close), text[i + hashes + len(quote):j]
            i = j + len(close)
            continue
        if c == '"':
            quote = '"""' if swift and text.startswith('"""', i) else '"'
            j, depth, content = i + len(quote), 0, []
            while j < n:
                if text.startswith("\\(", j) and swift:
                    # An interpolation: skip to its closing parenthesis (strings inside count too).
                    j += 2
                    depth = 1
                    while j < n and depth:
                        if text[j] == "(":
                            depth += 1
                        elif text[j] == ")":
                            depth -= 1
                        elif text[j] == '"':
                            k = j + 1
                            while k < n and text[k] != '"':
                                k += 2 if text[k] == "\\" else 1
                            j = k
                        j += 1
                    content.append(" X ")
                    continue
                if text[j] == "\\":
                    content.append(text[j:j + 2])
                    j += 2
                    continue
                if text.startswith(quote, j):
                    break
                content.append(text[j])
                j += 1
            yield i, j + len(quote), "".join(content)
            i = j + len(quote)
            continue
        i += 1


def problems_in(path, text):
    swift = path.endswith(".swift")
    found, marked_end = [], None
    for start, end, content in literals(text, swift):
        before = text[:start].rstrip()
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", end)
        line = text[line_start:line_end if line_end >= 0 else len(text)]
        # Marked: the template of tr/trn/N_ or of dngettext (C's plurals, after the domain); the
        # next literal after a comma (the plural) or after nothing (C's concatenation) too.
        if before.endswith(MARKS) and not before.endswith(("str(", "attr(")) or re.search(
                r"dngettext\(\s*\w+\s*,$", before) or (
                marked_end is not None and re.fullmatch(r"\s*,?\s*", text[marked_end:start])):
            marked_end = end
            continue
        marked_end = None
        if not WORDS.search(content):
            continue
        statement = text[text.rfind(";", 0, start) + 1 if not swift else line_start:start]
        # Comment lines right above the literal's line (at most two) may carry the annotation.
        above = [l for l in text[:line_start].split("\n")[-3:-1] if l.strip().startswith(("//", "/*", "*"))]
        above = "\n".join(above)
        if any(call in statement or call in line for call in ENGLISH_CALLS) or ANNOTATION.search(above + line):
            continue
        if not swift and line.lstrip().startswith("#"):
            # A C macro naming a log line (LA_LOG_*) or a header: English unless marked.
            if re.match(r"\s*#\s*define\s+LA_LOG_", line) or re.match(r"\s*#\s*(include|error|pragma)", line):
                continue
        found.append("%s:%d: not in the catalogue: %r (mark it with tr()/N_(), or say `English:` why not)"
                     % (os.path.relpath(path, ROOT), text.count("\n", 0, start) + 1, content[:80]))
    return found


def daemon_problems_in(path, text):
    """A RESULT or EVENT built with a literal message in the daemon."""
    found = []
    for m in DAEMON_LITERAL.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        above = "\n".join(text[:line_start].split("\n")[-3:-1])
        line_end = text.find("\n", m.end())
        line = text[line_start:line_end if line_end >= 0 else len(text)]
        if ANNOTATION.search(above + line):
            continue
        found.append("%s:%d: the daemon answers in English only: %s (give it a Phrase: Phrase.said(...))"
                     % (os.path.relpath(path, ROOT), text.count("\n", 0, m.start()) + 1, line.strip()[:80]))
    return found


def scope_files():
    import glob
    files = []
    for pattern in SCOPE:
        files += sorted(glob.glob(os.path.join(ROOT, pattern)))
    return files


SELF_TEST = {
    "a.swift": ('''let a = tr("Place your finger on the reader")
let b = trn("%d try left", "%d tries left", n, n)
let c = tr(
    "Wrapped over a line")
logger.info("the daemon started on socket")
let d = "Not marked at all"
let e = "right-index-finger"
let f = "\\(name) is enrolled already"  // English: an identifier for the logs
let g = """
    A multi-line text that a person reads
    """
''', ["Not marked at all", "A multi-line text"]),
    "Sources/LocalAuthDaemon/c.swift": ('''
        return RequestResult(.success, Phrase.said("Enrolled the %1$s of %2$s", .fingerName(f), .verbatim(u)))
        return Answer(.invalidRequest, english: "Unknown simulation")
        return RequestResult(
            .notFound, "No such print")
        // English: a test tool's answer
        return RequestResult(.notSupported, "Simulation needs a virtual reader")
''', ["No such print", "Unknown simulation"]),
    "b.c": ('''#define LA_TEXT N_("Password or finger for %s: ")
#define LA_LOG_X "fingerprint not used for %s: %s"
static void f(void) {
    pam_syslog(pamh, LOG_ERR, "cannot read the peer credentials of %s: %m",
               socket);
    show(s, PAM_ERROR_MSG, "Fingerprint reader went away");
    snprintf(buf, n, "%s", x);
}
''', ["Fingerprint reader went away"]),
}


def self_test():
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        for name, (text, expected) in SELF_TEST.items():
            path = os.path.join(d, os.path.basename(name))
            found = daemon_problems_in(path, text) if "LocalAuthDaemon" in name else problems_in(path, text)
            ok = len(found) == len(expected) and all(any(e in f for f in found) for e in expected)
            print("%s self-test %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else ": %s" % found))
            failures += 0 if ok else 1
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    if args.self_test:
        sys.exit(1 if self_test() else 0)
    files = [os.path.abspath(f) for f in args.files] or scope_files()
    found = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            found += problems_in(path, f.read())
    if not args.files:
        import glob
        daemon = sorted(f for pattern in DAEMON_SCOPE for f in glob.glob(os.path.join(ROOT, pattern)))
        for path in daemon:
            with open(path, encoding="utf-8") as f:
                found += daemon_problems_in(path, f.read())
        files += daemon
    for line in found:
        print(line)
    print("%d files: %s" % (len(files), "%d lines not in the catalogue" % len(found) if found
                            else "every line a person reads is in the catalogue"))
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
