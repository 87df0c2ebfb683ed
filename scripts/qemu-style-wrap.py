#!/usr/bin/env python3
"""Wrap the lines of C files that QEMU's checkpatch.pl finds over 80 columns.

The mechanical part of making qemu-hw/ and host-backend/ pass make lint, kept
so that the same fix can be redone after a merge:

    python3 scripts/qemu-style-wrap.py FILE...

Only lines over the limit change. Comments first, by this script: a one-line
comment becomes a block comment (QEMU wants "/*" and "*/" on lines of their
own then), a "---- name ----" separator loses dashes, a line of a block
comment is re-wrapped with the rest of its paragraph, and a comment trailing
code moves above it. Then code: clang-format (scripts/qemu-style.clang-format)
on just those lines, with comment reflow off. What is left (a string that
cannot be split, a table) is for a person; make lint lists it.
"""
import os
import re
import subprocess
import sys
import textwrap

LIMIT = 80
HERE = os.path.dirname(os.path.abspath(__file__))
STYLE = os.path.join(HERE, "qemu-style.clang-format")


def too_long(line):
    """checkpatch's rule: over 80, except a line holding only a string or a URL."""
    if len(line.expandtabs(8)) <= LIMIT:
        return False
    if re.match(r'^\s*"[^"]*"\s*(?:\s*|,|\)\s*;)\s*$', line):
        return False
    if re.match(r'^[^0-9A-Za-z]*https?:\S*$', line):
        return False
    return True


def wrap(text, indent):
    return textwrap.wrap(text, width=LIMIT - len(indent), break_long_words=False,
                         break_on_hyphens=False) or [""]


def block(indent, text):
    """A comment of its own as a QEMU block comment."""
    return ([indent + "/*"] + [(indent + " * " + w).rstrip() for w in wrap(text, indent + " * ")] +
            [indent + " */"])


def fix_comments(lines):
    out = []
    i = 0
    in_block = False
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not in_block:
            m = re.match(r'^(\s*)/\*\s?(.*?)\s*\*/$', line)
            if m and too_long(line):
                indent, text = m.groups()
                sep = re.match(r'^(-{2,}) (.*?) -+$', text)
                if sep:
                    head = "%s/* %s %s " % (indent, sep.group(1), sep.group(2))
                    out.append(head + "-" * max(2, LIMIT - len(head) - 3) + " */")
                else:
                    out.extend(block(indent, text))
                i += 1
                continue
            # code, then a comment that ends on this line
            m = re.match(r'^(\s*)(\S.*?)\s+/\*\s?(.*?)\s*\*/$', line)
            if m and too_long(line) and "/*" not in m.group(2) and not m.group(2).endswith("\\") \
                    and len(m.group(1) + m.group(2)) <= LIMIT:
                indent, code, text = m.groups()
                one = "%s/* %s */" % (indent, text)
                out.extend([one] if not too_long(one) else block(indent, text))
                out.append(indent + code)
                i += 1
                continue
            if "/*" in line and "*/" not in line[line.index("/*"):]:
                in_block = True
            out.append(line)
            i += 1
            continue
        # inside a block comment
        if "*/" in line:
            in_block = False
        m = re.match(r'^(\s*)\* (\S.*)$', line)
        if m and too_long(line) and "*/" not in line:
            indent = m.group(1)
            prefix = indent + "* "
            # the paragraph from here: lines of plain text with the same prefix
            para = [m.group(2)]
            j = i + 1
            while j < len(lines):
                n = re.match(r'^' + re.escape(prefix) + r'(\S.*)$', lines[j])
                if not n or "*/" in lines[j]:
                    break
                para.append(n.group(1))
                j += 1
            out.extend((prefix + w).rstrip() for w in wrap(" ".join(para), prefix))
            i = j
            continue
        out.append(line)
        i += 1
    return out


def code_lines(lines):
    return [n + 1 for n, line in enumerate(lines) if too_long(line)]


def fix_file(path):
    with open(path) as f:
        lines = f.read().split("\n")
    lines = fix_comments(lines)
    with open(path, "w") as f:
        f.write("\n".join(lines))
    todo = code_lines(lines)
    if todo:
        subprocess.run(["clang-format", "--style=file:" + STYLE, "-i"] +
                       ["--lines=%d:%d" % (n, n) for n in todo] + [path], check=True)


def main():
    for path in sys.argv[1:]:
        fix_file(path)


if __name__ == "__main__":
    main()
