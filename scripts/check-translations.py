#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The build's check of the catalogue (make check-translations).

    check-translations.py --pot .build/po/localauth.pot po/de.po po/ko.po po/zh_CN.po
    check-translations.py --self-test

For each language: every message of the .pot (generated from the sources) has a translation,
none is fuzzy, the .po holds no message the sources no longer have, every plural form is filled,
and each translation uses the same conversions as the English (%s, %d, %lld, … by position:
a translation may reorder them with %1$s, never drop, add or change one, which in the C module
would read the wrong argument). msgfmt --check runs over each file as well. Exit 1 with one line
per problem.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

CONVERSION = re.compile(r"%(?:(\d+)\$)?[-+ #0]*\d*(?:\.\d*)?(hh|h|ll|l|z|j|t)?([sdiuxXc%])")


def parse_po(path):
    """Entries of a PO file: dicts with msgid, msgid_plural, msgstr (list), fuzzy, obsolete."""
    entries, entry, field = [], None, None

    def finish():
        if entry is not None and "msgid" in entry:
            entries.append(entry)

    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            obsolete = line.startswith("#~")
            if obsolete:
                line = line[2:].lstrip()
            if not line.strip():
                finish()
                entry, field = None, None
                continue
            if entry is None:
                entry = {"msgstr": {}, "fuzzy": False, "obsolete": False, "flags": set()}
            if obsolete:
                entry["obsolete"] = True
            if line.startswith("#,"):
                flags = {f.strip() for f in line[2:].split(",")}
                entry["flags"] |= flags
                entry["fuzzy"] = entry["fuzzy"] or "fuzzy" in flags
                continue
            if line.startswith("#"):
                continue
            m = re.match(r'(msgctxt|msgid_plural|msgid|msgstr(?:\[(\d+)\])?)\s+"(.*)"$', line)
            if m:
                key = m.group(1)
                text = unquote(m.group(3))
                if key.startswith("msgstr"):
                    field = ("msgstr", int(m.group(2) or 0))
                    entry["msgstr"][field[1]] = text
                else:
                    if "msgstr" in entry and entry["msgstr"] and key in ("msgid", "msgctxt"):
                        finish()
                        entry = {"msgstr": {}, "fuzzy": False, "obsolete": obsolete, "flags": set()}
                    field = (key, None)
                    entry[key] = text
                continue
            m = re.match(r'"(.*)"$', line)
            if m and field is not None:
                if field[0] == "msgstr":
                    entry["msgstr"][field[1]] += unquote(m.group(1))
                else:
                    entry[field[0]] += unquote(m.group(1))
                continue
            raise SystemExit("%s: cannot read line %r" % (path, raw))
    finish()
    return entries


def unquote(s):
    out, i = [], 0
    escapes = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "r": "\r", "a": "\a", "b": "\b"}
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            out.append(escapes.get(s[i + 1], s[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def conversions(text):
    """The conversions a printf template takes, as {position: length+type}; %% is not one."""
    found, next_position = {}, 1
    for m in CONVERSION.finditer(text):
        if m.group(3) == "%":
            continue
        position = int(m.group(1)) if m.group(1) else next_position
        next_position = position + 1
        kind = (m.group(2) or "") + m.group(3).replace("i", "d")
        found[position] = kind
    return found


def key(entry):
    return (entry.get("msgctxt"), entry["msgid"])


def check(pot_path, po_paths):
    problems = []
    pot = {key(e): e for e in parse_po(pot_path) if e["msgid"] != "" and not e["obsolete"]}
    if not pot:
        problems.append("%s: no messages (is xgettext finding the sources?)" % pot_path)
    for po_path in po_paths:
        name = os.path.basename(po_path)
        entries = parse_po(po_path)
        header = next((e for e in entries if e["msgid"] == "" and not e["obsolete"]), None)
        if header is None or "Plural-Forms:" not in header["msgstr"].get(0, ""):
            problems.append("%s: no header with Plural-Forms" % name)
        nplurals = 2
        if header is not None:
            m = re.search(r"nplurals\s*=\s*(\d+)", header["msgstr"].get(0, ""))
            nplurals = int(m.group(1)) if m else 2
        live = {key(e): e for e in entries if e["msgid"] != "" and not e["obsolete"]}
        for k, english in pot.items():
            label = "%s: %r" % (name, english["msgid"])
            translated = live.get(k)
            if translated is None:
                problems.append("%s: not translated (run make po-update, then translate it)" % label)
                continue
            if translated["fuzzy"]:
                problems.append("%s: fuzzy (check the translation and remove the fuzzy flag)" % label)
            if "msgid_plural" in english:
                forms = [translated["msgstr"].get(i, "") for i in range(nplurals)]
                if translated.get("msgid_plural") != english["msgid_plural"]:
                    problems.append("%s: the plural's English differs from the sources" % label)
            else:
                forms = [translated["msgstr"].get(0, "")]
            for i, form in enumerate(forms):
                if form == "":
                    problems.append("%s: empty translation%s" % (
                        label, " (plural form %d)" % i if len(forms) > 1 else ""))
                    continue
                source = english["msgid"] if i == 0 and len(forms) > 1 or "msgid_plural" not in english \
                    else english["msgid_plural"]
                want, got = conversions(source), conversions(form)
                if want != got:
                    problems.append("%s: conversions %s in the English, %s in the translation %r" % (
                        label, fmt(want), fmt(got), form))
        for k, e in live.items():
            if k not in pot:
                problems.append("%s: %r is no longer in the sources (run make po-update)" % (name, e["msgid"]))
        r = subprocess.run(["msgfmt", "--check", "--output-file=/dev/null", po_path],
                           capture_output=True, text=True)
        if r.returncode != 0:
            problems.append("%s: msgfmt --check: %s" % (name, r.stderr.strip()))
    return problems


def fmt(conv):
    return "{%s}" % ", ".join("%d:%%%s" % (p, t) for p, t in sorted(conv.items())) if conv else "none"


POT = '''msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"

#, c-format
msgid "Password or finger for %s: "
msgstr ""

#, c-format
msgid "%d try left"
msgid_plural "%d tries left"
msgstr[0] ""
msgstr[1] ""

msgid "Wrong passcode"
msgstr ""
'''

HEADER = '''msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"
"Plural-Forms: nplurals=2; plural=(n != 1);\\n"

'''


def self_test():
    """Each kind of problem is found, and a good file passes."""
    good = HEADER + '''#, c-format
msgid "Password or finger for %s: "
msgstr "Passwort oder Finger für %s: "

#, c-format
msgid "%d try left"
msgid_plural "%d tries left"
msgstr[0] "noch %d Versuch"
msgstr[1] "noch %d Versuche"

msgid "Wrong passcode"
msgstr "Falscher Code"
'''
    cases = {
        "good": (good, []),
        "missing": (good.replace('msgid "Wrong passcode"\nmsgstr "Falscher Code"\n', ""), ["not translated"]),
        "fuzzy": (good.replace('msgid "Wrong passcode"', '#, fuzzy\nmsgid "Wrong passcode"'), ["fuzzy"]),
        "empty": (good.replace('msgstr "Falscher Code"', 'msgstr ""'), ["empty translation"]),
        "dropped argument": (good.replace("Finger für %s: ", "Finger: "), ["conversions"]),
        "changed type": (good.replace("Finger für %s: ", "Finger für %d: "), ["conversions"]),
        "plural form": (good.replace('"noch %d Versuche"', '"noch einige Versuche"'), ["conversions"]),
        "left over": (good + '\nmsgid "Gone"\nmsgstr "Weg"\n', ["no longer in the sources"]),
        "reordered": (good.replace("Finger für %s: ", "Finger für %1$s: "), []),
    }
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        pot = os.path.join(d, "t.pot")
        with open(pot, "w", encoding="utf-8") as f:
            f.write(POT)
        for name, (text, expected) in cases.items():
            po = os.path.join(d, "de.po")
            with open(po, "w", encoding="utf-8") as f:
                f.write(text)
            problems = [p for p in check(pot, [po]) if "msgfmt" not in p or not expected]
            ok = (not problems) if not expected else all(any(e in p for p in problems) for e in expected)
            print("%s self-test %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else ": %s" % problems))
            failures += 0 if ok else 1
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pot")
    parser.add_argument("--self-test", action="store_true")
    parser.add_argument("po", nargs="*")
    args = parser.parse_args()
    if args.self_test:
        sys.exit(1 if self_test() else 0)
    problems = check(args.pot, args.po)
    for p in problems:
        print(p)
    count = len(parse_po(args.pot)) - 1
    print("%d messages, %d languages: %s" % (count, len(args.po),
                                             "%d problems" % len(problems) if problems else "all translated"))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
