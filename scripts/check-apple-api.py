#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails when a declaration of Apple's API marked for Linux has no use in the compile test (make lint).

    check-apple-api.py [--self-test] [LIST [COMPILE_TEST]]

LIST (docs/apple-api.md) has one table row per declaration of Apple's LocalAuthentication module,
`| ID | Declaration | … | on Linux |`; a row whose last cell starts with "yes" must compile here.
COMPILE_TEST (Tests/AppleStyleTests/AppleSpellings.swift) uses each such declaration as Apple-platform
code does and tags the use with the row's ID in a comment on the same line: `foo.bar  // [SEC-03]`.
Reported, one line each, exit 1:
  - a *yes* row with no tagged use;
  - a tag on a line with no code before its comment (a tag must mark a use, not a mention);
  - a tag that names no row, or a row not marked *yes* (the test must not use those);
  - a *yes* count that differs from the one LIST states ("**N *yes***").
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
LIST = os.path.join(ROOT, "docs", "apple-api.md")
COMPILE_TEST = os.path.join(ROOT, "Tests", "AppleStyleTests", "AppleSpellings.swift")

ROW = re.compile(r"^\|\s*([A-Z]+-\d+)\s*\|(.*)\|\s*$")
TAG = re.compile(r"\[([A-Z]+-\d+)\]")
STATED = re.compile(r"\*\*(\d+) \*yes\*\*\*")


def rows(text):
    """{ID: True when marked for Linux} of every table row with an ID."""
    found = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            last = m.group(2).split("|")[-1].strip()
            found[m.group(1)] = last.startswith("yes")
    return found


def uses(text):
    """{ID: [line numbers]} of the tags on code lines, and [(line, ID)] of tags on comment-only lines."""
    used, stray = {}, []
    for number, line in enumerate(text.splitlines(), 1):
        code, sep, comment = line.partition("//")
        if not sep:
            continue
        for tag in TAG.findall(comment):
            if code.strip():
                used.setdefault(tag, []).append(number)
            else:
                stray.append((number, tag))
    return used, stray


def check(list_text, test_text, test_name="the compile test"):
    problems = []
    declared = rows(list_text)
    wanted = sorted(i for i, yes in declared.items() if yes)
    stated = STATED.search(list_text)
    if stated and int(stated.group(1)) != len(wanted):
        problems.append(f"the list states {stated.group(1)} *yes* rows but has {len(wanted)}")
    used, stray = uses(test_text)
    for i in wanted:
        if i not in used:
            problems.append(f"{i}: marked for Linux, not used in {test_name}")
    for number, tag in stray:
        problems.append(f"{test_name}:{number}: [{tag}] tags a line without code")
    for tag, lines in sorted(used.items()):
        if tag not in declared:
            problems.append(f"{test_name}:{lines[0]}: [{tag}] is not a row of the list")
        elif not declared[tag]:
            problems.append(f"{test_name}:{lines[0]}: [{tag}] is not marked for Linux; the test must not use it")
    return problems


def self_test():
    doc = "\n".join([
        "Counts: **2 *yes***",
        "| ID | Declaration | on Linux |",
        "|---|---|---|",
        "| A-01 | `x` | yes |",
        "| A-02 | `y` | yes (stub) |",
        "| A-03 | `z` | no: none |",
    ])
    assert check(doc, "x()  // [A-01]\ny()  // [A-02]\n") == []
    assert check(doc, "x()  // [A-01]\n") == ["A-02: marked for Linux, not used in the compile test"]
    assert check(doc, "x()  // [A-01]\n// y() [A-02]\n") == [
        "A-02: marked for Linux, not used in the compile test",
        "the compile test:2: [A-02] tags a line without code"]
    assert check(doc, "x()  // [A-01] [A-02]\nz()  // [A-03] [B-01]\n") == [
        "the compile test:2: [A-03] is not marked for Linux; the test must not use it",
        "the compile test:2: [B-01] is not a row of the list"]
    assert check(doc.replace("**2", "**3"), "x()  // [A-01] [A-02]\n") == [
        "the list states 3 *yes* rows but has 2"]
    print("check-apple-api.py: self-test passed")


def main(argv):
    if argv[:1] == ["--self-test"]:
        self_test()
        return 0
    list_path = argv[0] if argv else LIST
    test_path = argv[1] if len(argv) > 1 else COMPILE_TEST
    with open(list_path, encoding="utf-8") as f:
        list_text = f.read()
    with open(test_path, encoding="utf-8") as f:
        test_text = f.read()
    problems = check(list_text, test_text, os.path.relpath(test_path, ROOT))
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check-apple-api.py: {len(problems)} problem(s); docs/apple-api.md lists Apple's API",
              file=sys.stderr)
        return 1
    print(f"check-apple-api.py: {sum(rows(list_text).values())} declarations marked for Linux, each used")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
