#!/usr/bin/python3
"""The README's Layout section, generated from the tree, and the tree's rules.

  scripts/layout.py            print the Layout section
  scripts/layout.py --write    replace the README's Layout section with it
  scripts/layout.py --check    exit 1 when the README's section differs from
                               the tree, or when a C file in src/ or tools/
                               lacks a header comment or is above MAX_LINES

Each source file's line is the first sentence of its header comment, so the
Layout cannot drift from the files: a new file without a header, or a README
not regenerated after adding one, fails the ctest test_tree.
"""
import os
import re
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_LINES = 900
WIDTH = 100
MAX_SENTENCE = 170

# Folders listed with a fixed description; those in DETAILED also list each
# source file with the first sentence of its header comment.
FOLDERS = [
    ("include/sla/", "the public API, one header per concept (include/sla.h includes them all)"),
    ("src/core/", "context, matrix, Matrix Market, generators, kernels, scale-safe norms, threads"),
    ("src/solvers/", "Krylov methods, preconditioners, the method registry and the solver object"),
    ("src/backends/", "the only code that names an external library: direct solvers, hypre"),
    ("src/ops/", "differentiable operations beyond the solve"),
    ("src/dist/", "the MPI layer (partition, halo exchange, distributed solves)"),
    ("tools/", "the command-line tool `sla`, one file per command"),
    ("python/sla/", "the PyTorch binding (ctypes); python/tests/ its tests"),
    ("tests/", "the ctest suite (C tests, CLI, install and Python tests), real matrices in tests/data"),
    ("fuzz/", "libFuzzer targets"),
    ("bench/", "benchmarks and their recorded results (RESULTS.md and friends)"),
    ("examples/", "C and Python examples"),
    ("docs/", "one chapter per capability"),
    ("scripts/", "dependency installation, fuzzing, this Layout"),
    ("cmake/", "find modules and the installed package's templates"),
]
DETAILED = ["include/sla/", "src/core/", "src/solvers/", "src/backends/", "src/ops/", "src/dist/", "tools/"]
CHECKED = ["src/core/", "src/solvers/", "src/backends/", "src/ops/", "src/dist/", "tools/"]


def header_sentence(path):
    """The first sentence of the file's leading /* ... */ comment, or None."""
    with open(path, encoding="utf-8") as f:
        text = f.read(40000)
    m = re.match(r"\s*/\*(.*?)\*/", text, re.S)
    if not m:
        return None
    body = " ".join(line.strip().lstrip("*").strip() for line in m.group(1).splitlines())
    body = re.sub(r"\s+", " ", body).strip()
    if not body:
        return None
    dash = body.find(" — ")  # "name.h — what it is": the name is in the Layout already
    if 0 <= dash < 40:
        body = body[dash + 3:]
    # the first sentence: up to ". " followed by a capital, or the end; a
    # long one is cut after a clause, at most MAX_SENTENCE characters
    s = re.split(r"(?<=\.)\s+(?=[A-Z(])", body, maxsplit=1)[0].rstrip(".")
    if len(s) > MAX_SENTENCE:
        cut = max(s.rfind(c, 0, MAX_SENTENCE) for c in (",", ";", ":", " ("))
        s = s[:cut if cut > 40 else MAX_SENTENCE].rstrip(" ,;:") + " ..."
    return s or None


def source_files(folder):
    d = os.path.join(ROOT, folder)
    if not os.path.isdir(d):
        return []
    return sorted(f for f in os.listdir(d)
                  if f.endswith((".c", ".h", ".h.in")) and os.path.isfile(os.path.join(d, f)))


def layout():
    out = ["```"]
    for folder, what in FOLDERS:
        if not os.path.isdir(os.path.join(ROOT, folder)):
            continue
        out.append("%-14s %s" % (folder, what))
        if folder not in DETAILED:
            continue
        files = source_files(folder)
        width = max((len(f) for f in files), default=0) + 2
        for f in files:
            s = header_sentence(os.path.join(ROOT, folder, f)) or "(no header comment)"
            lines = textwrap.wrap(s, WIDTH - 2 - width)
            out.append("  " + f.ljust(width) + lines[0])
            out.extend("  " + " " * width + l for l in lines[1:])
    out.append("```")
    return out


def readme_section(lines):
    start = lines.index("## Layout")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return start, end


def problems():
    bad = []
    for folder in CHECKED:
        for f in source_files(folder):
            p = os.path.join(ROOT, folder, f)
            with open(p, encoding="utf-8") as fh:
                n = sum(1 for _ in fh)
            if n > MAX_LINES:
                bad.append("%s%s: %d lines (more than %d: split it by concept)" % (folder, f, n, MAX_LINES))
            if header_sentence(p) is None:
                bad.append("%s%s: no header comment saying its concept" % (folder, f))
    return bad


def main():
    readme = os.path.join(ROOT, "README.md")
    with open(readme, encoding="utf-8") as f:
        lines = f.read().split("\n")
    start, end = readme_section(lines)
    new = ["## Layout", ""] + layout() + [""]
    if "--write" in sys.argv:
        lines[start:end] = new
        with open(readme, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        return 0
    if "--check" in sys.argv:
        bad = problems()
        if lines[start:end] != new:
            bad.append("README.md's Layout section does not match the tree: run scripts/layout.py --write")
        for b in bad:
            print("test_tree:", b)
        print("test_tree: %s" % ("FAILED" if bad else "ok"))
        return 1 if bad else 0
    print("\n".join(new))
    return 0


if __name__ == "__main__":
    sys.exit(main())
