#!/usr/bin/env python3
"""Check that the public C API is documented.

  check_api_docs.py INCLUDE_DIR

Reads INCLUDE_DIR/opreg/*.h and fails (exit 1, one line a problem) when
  - an OPREG_API declaration has no `///` comment with text right above it
    (or a `///<` comment after it);
  - a status code of OPREG_STATUS_LIST (common.h) has no `/// @var CODE`
    block with text, or such a block names a code that does not exist.
Doxygen's own check (the `docs_api_reference` test) covers the rest of the
reference; this one needs only Python, and knows the status X-macro, whose
codes Doxygen does not warn about.
"""
import glob
import os
import re
import sys


def doc_above(lines, i):
    """The text of the `///` block that ends right above line i ('' if none)."""
    text = []
    j = i - 1
    while j >= 0 and lines[j].lstrip().startswith("///"):
        body = lines[j].lstrip()[3:].strip()
        if body not in ("@{", "@}") and not body.startswith("@name"):
            text.append(body)
        j -= 1
    return " ".join(reversed(text)).strip()


def check_functions(path, lines, problems):
    count = 0
    for i, line in enumerate(lines):
        if not re.match(r"\s*OPREG_API\b", line):
            continue
        count += 1
        # The declaration may span lines; a trailing ///< documents it too.
        end = i
        while end < len(lines) and ";" not in lines[end]:
            end += 1
        trailing = any("///<" in lines[k] for k in range(i, min(end + 1, len(lines))))
        if not doc_above(lines, i) and not trailing:
            name = re.search(r"(\w+)\s*\(", " ".join(lines[i:end + 1]))
            problems.append("%s:%d: %s is not documented (a `///` comment above it)"
                            % (path, i + 1, name.group(1) if name else line.strip()))
    return count


def check_status_codes(path, text, problems):
    lines = text.split("\n")
    start = next((i for i, l in enumerate(lines) if l.startswith("#define OPREG_STATUS_LIST")), None)
    if start is None:
        problems.append("%s: no OPREG_STATUS_LIST" % path)
        return 0
    end = start
    while end < len(lines) and lines[end].rstrip().endswith("\\"):
        end += 1
    block = "\n".join(lines[start:end + 1])
    codes = re.findall(r"X\((OPREG_\w+),\s*(\d+),\s*\"([^\"]*)\"\)", block)
    documented = {}
    for i, line in enumerate(lines):
        v = re.match(r"\s*///\s*@var\s+(OPREG_\w+)\s*$", line)
        if not v:
            continue
        body = []
        j = i + 1
        while j < len(lines) and lines[j].lstrip().startswith("///") and "@var" not in lines[j]:
            body.append(lines[j].lstrip()[3:].strip())
            j += 1
        documented[v.group(1)] = " ".join(body).strip()
    names = set()
    for name, number, desc in codes:
        names.add(name)
        if not desc.strip():
            problems.append("%s: status %s has no description in OPREG_STATUS_LIST" % (path, name))
        if not documented.get(name):
            problems.append("%s: status %s (%s) is not documented: add a `/// @var %s` block"
                            % (path, name, number, name))
    for name in documented:
        if name not in names and name.startswith("OPREG_ERR_"):
            problems.append("%s: `@var %s` documents no status code" % (path, name))
    return len(codes)


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    headers = sorted(glob.glob(os.path.join(argv[1], "opreg", "*.h")))
    if not headers:
        print("no headers under %s/opreg" % argv[1], file=sys.stderr)
        return 2
    problems = []
    nfun = ncodes = 0
    for path in headers:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        nfun += check_functions(path, text.split("\n"), problems)
        if "#define OPREG_STATUS_LIST" in text:
            ncodes += check_status_codes(path, text, problems)
    for p in problems:
        print(p)
    if ncodes == 0:
        print("no status codes found (OPREG_STATUS_LIST)")
        return 1
    print("%d public functions and %d status codes checked, %d undocumented"
          % (nfun, ncodes, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
