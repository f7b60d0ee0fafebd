#!/usr/bin/env python3
"""Check that every quoted #include keeps to the layers of docs/architecture.md.

  test_layers.py SOURCE_DIR [DOC]

DOC (default SOURCE_DIR/docs/architecture.md) holds one ```layers block:

  FOLDER: FOLDER...          the folders FOLDER's files may include
  FILE -> HEADER...          known exceptions: FILE may include these headers
  # ...                      a comment

A file belongs to the longest FOLDER of the block that holds it (so a row
covers its subfolders unless they have a row of their own), and may always
include headers of its own row. The block must agree with the Markdown table
whose header is `| folder | may include |`.

Every .c/.h/.cu/.cuh (and .cpp/.hpp) file under SOURCE_DIR is read, except
under top-level build*/, _build*/, install*/ and hidden folders. Its quoted
includes are resolved as the compiler's include path does: the including
file's folder, then the project root, then include/, then (for files under
tests/) tests/. A name without a slash that resolves nowhere is a header
generated into the build folder of the including file's folder. System
includes (<...>) are not looked at.

Fails (exit 1, one line a problem) on an include that its file's row does
not allow, a folder with sources that no row covers, a row naming a folder
that does not exist, an exception that no longer matches an include, and a
table that disagrees with the block.
"""
import os
import re
import sys

SOURCE_EXT = (".c", ".h", ".cu", ".cuh", ".cpp", ".hpp")
# Top-level folders that hold build outputs, not sources.
SKIP_TOP = re.compile(r"^(build|_build|install).*$|^deps-bundle$")
# Files being moved: checked as if they were at the new path already.
MOVED = {}
INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.M)


def norm(folder):
    folder = folder.strip().strip("`").rstrip("/")
    return folder


def parse_block(text, doc, problems):
    blocks = re.findall(r"^```layers[ \t]*\n(.*?)^```", text, re.M | re.S)
    if len(blocks) != 1:
        problems.append("%s: needs exactly one ```layers block, has %d" % (doc, len(blocks)))
        return None, None
    rows, exceptions = {}, {}
    for n, raw in enumerate(blocks[0].split("\n"), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if "->" in line:
            path, headers = line.split("->", 1)
            path = path.strip()
            for h in headers.split():
                exceptions[(path, h)] = False
        elif ":" in line:
            folder, allowed = line.split(":", 1)
            folder = norm(folder)
            if folder in rows:
                problems.append("%s: layers block line %d: %s has a second row" % (doc, n, folder))
            rows[folder] = set(norm(a) for a in allowed.split())
        else:
            problems.append("%s: layers block line %d: not `FOLDER: ...` or `FILE -> ...`: %s"
                            % (doc, n, raw.strip()))
    for folder, allowed in rows.items():
        for a in sorted(allowed - set(rows)):
            problems.append("%s: row %s allows %s, which has no row of its own" % (doc, folder, a))
    return rows, exceptions


def parse_table(text, doc, rows, problems):
    """The Markdown table `| folder | may include |` must say what the block says."""
    lines = text.split("\n")
    start = next((i for i, l in enumerate(lines)
                  if re.match(r"^\|\s*folder\s*\|\s*may include\s*\|\s*$", l, re.I)), None)
    if start is None:
        problems.append("%s: no `| folder | may include |` table" % doc)
        return
    table = {}
    for l in lines[start + 2:]:
        if not l.startswith("|"):
            break
        cells = [c.strip() for c in l.strip().strip("|").split("|")]
        if len(cells) < 2:
            continue
        table[norm(cells[0])] = set(norm(c) for c in re.findall(r"`([^`]+)`", cells[1]))
    for folder in sorted(set(rows) | set(table)):
        if folder not in table:
            problems.append("%s: %s is in the layers block but not in the table" % (doc, folder))
        elif folder not in rows:
            problems.append("%s: %s is in the table but not in the layers block" % (doc, folder))
        elif table[folder] != rows[folder]:
            problems.append("%s: the table says %s may include {%s}, the layers block {%s}"
                            % (doc, folder, " ".join(sorted(table[folder])),
                               " ".join(sorted(rows[folder]))))


def strip_comments(src):
    """The source with comments blanked (newlines kept, so line numbers hold)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if c == "/" and src.startswith("/*", i):
            end = src.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", src[i:end]))
            i = end
        elif c == "/" and src.startswith("//", i):
            end = src.find("\n", i)
            end = n if end < 0 else end
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append(src[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def sources(root):
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        rel = "" if rel == "." else rel.replace(os.sep, "/")
        dirnames[:] = sorted(d for d in dirnames
                             if not d.startswith(".") and not (rel == "" and SKIP_TOP.match(d)))
        for f in sorted(filenames):
            if f.endswith(SOURCE_EXT):
                yield (rel + "/" + f) if rel else f


def row_of(path, rows):
    """The longest folder of the table that holds `path` (None if none does)."""
    best = None
    for folder in rows:
        if path.startswith(folder + "/") and (best is None or len(folder) > len(best)):
            best = folder
    return best


def resolve(root, physical, name):
    """The project-relative path `name` names from `physical`, or None."""
    here = os.path.dirname(physical)
    search = [here, "", "include"]
    if physical.startswith("tests/"):
        search.append("tests")
    for d in search:
        cand = os.path.normpath(os.path.join(d, name)).replace(os.sep, "/")
        if not cand.startswith("../") and os.path.isfile(os.path.join(root, cand)):
            return cand
    return None


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__.strip().split("\n")[2].strip())
        return 2
    root = os.path.abspath(argv[1])
    doc = argv[2] if len(argv) == 3 else os.path.join(root, "docs", "architecture.md")
    problems = []
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    rows, exceptions = parse_block(text, doc, problems)
    if rows is None:
        print("\n".join(problems))
        return 1
    parse_table(text, doc, rows, problems)
    for folder in sorted(rows):
        if not os.path.isdir(os.path.join(root, folder)):
            problems.append("%s: row %s names a folder that does not exist" % (doc, folder))

    files = includes = 0
    unrowed = set()
    for physical in sources(root):
        logical = MOVED.get(physical, physical)
        shown = physical if logical == physical else "%s (checked as %s)" % (physical, logical)
        mine = row_of(logical, rows)
        if mine is None:
            unrowed.add(os.path.dirname(logical) or ".")
            continue
        files += 1
        with open(os.path.join(root, physical), encoding="utf-8", errors="replace") as f:
            src = strip_comments(f.read())
        for m in INCLUDE_RE.finditer(src):
            includes += 1
            line = src.count("\n", 0, m.start()) + 1
            name = m.group(1)
            target = resolve(root, physical, name)
            if target is None:
                if "/" in name:
                    problems.append('%s:%d: includes "%s", which is no file of the project'
                                    % (shown, line, name))
                # else: generated into this folder's build folder; its own row.
                continue
            target = MOVED.get(target, target)
            theirs = row_of(target, rows)
            if (logical, target) in exceptions:
                exceptions[(logical, target)] = True
                continue
            if theirs == mine or theirs in rows[mine]:
                continue
            allowed = " ".join(sorted(rows[mine])) or "nothing but itself"
            problems.append('%s:%d: includes "%s" (%s), but %s may include only: %s'
                            % (shown, line, name, theirs or "a folder with no row", mine, allowed))
    for folder in sorted(unrowed):
        problems.append("%s: holds sources but no row of the layers block in %s covers it"
                        % (folder, doc))
    for (path, header), used in sorted(exceptions.items()):
        if not used:
            problems.append("%s: the exception %s -> %s matches no include (remove it)"
                            % (doc, path, header))

    if problems:
        print("\n".join(problems))
        print("%d layering problem%s (rules: the ```layers block of %s)"
              % (len(problems), "" if len(problems) == 1 else "s", doc))
        return 1
    print("ok: %d files, %d quoted includes, %d folders, all within the layers of %s"
          % (files, includes, len(rows), os.path.relpath(doc, root)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
