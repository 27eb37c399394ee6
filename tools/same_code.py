"""Whether the library's code is unchanged since a git revision, docstrings and comments aside.

A change that only rewrites docstrings or comments claims to change no behaviour; this proves it:
every module's syntax tree, with the docstrings of its module, classes and functions removed, is
compared with the same module's at ``REV``. Modules added or removed are listed as differing.

    python -m tools.same_code HEAD~1            # exit 0: same code; 1: the modules that differ
    python -m tools.same_code HEAD~1 overinterp/pages
"""
from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def code_of(source: str) -> str:
    """The module's syntax tree without docstrings, as text (comments are not in the tree)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, include_attributes=False)


def differing(rev: str, folder: str = "overinterp") -> list[str]:
    """The modules under ``folder`` whose code differs from ``rev``'s (or exists on one side only)."""
    listed = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, folder], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.split()
    old = {p for p in listed if p.endswith(".py")}
    new = {str(p.relative_to(ROOT)) for p in (ROOT / folder).rglob("*.py")}
    out = sorted(old ^ new)
    for path in sorted(old & new):
        before = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, check=True, capture_output=True,
                                text=True).stdout
        if code_of(before) != code_of((ROOT / path).read_text()):
            out.append(path)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("rev", help="the git revision to compare with")
    p.add_argument("folder", nargs="?", default="overinterp", help="the folder compared (default: overinterp)")
    a = p.parse_args()
    diff = differing(a.rev, a.folder)
    for path in diff:
        print(f"differs: {path}")
    print(f"same code as {a.rev}: {'no' if diff else 'yes'}", file=sys.stderr)
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
