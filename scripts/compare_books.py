"""Compare two executed books: every glued value, displayed table and figure, chapter by chapter.

A restructuring must not move what a reader sees. Execute the book before and after the change
on one machine, each from an empty artifact store with the same seed, then:

    python scripts/compare_books.py BEFORE/_build/stage/book AFTER/_build/stage/book [--json OUT]

It reads the executed notebooks (``_build/stage/book/*.ipynb``), collects per chapter the glued
values (myst-nb ``glue``: outputs whose metadata names a scrapbook entry), the tables and Markdown
the chapter displays, and a hash of each figure's PNG, and lists every difference. Exit code 0
when the glued values and tables are identical, 1 otherwise (figures are reported, not judged:
the same plot can differ in bytes between matplotlib builds). A pandas Styler's random table id and
object addresses in reprs are masked before comparing. ``--ignore`` takes regular
expressions of glue names to leave out (say why in the report, e.g. wall-clock seconds).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

TEXT = ("text/markdown", "text/html", "text/plain", "text/latex")


#: what differs between two executions without a reader seeing it: a pandas Styler's random table id
#: and an object's memory address in a repr
RANDOM = [(re.compile(r"T_[0-9a-f]{5}(?=[_ \"])"), "T_id"), (re.compile(r" at 0x[0-9a-f]+"), " at 0x")]


def _text(data: dict) -> str:
    for mime in TEXT:
        if mime in data:
            value = data[mime]
            value = "".join(value) if isinstance(value, list) else value
            for pattern, same in RANDOM:
                value = pattern.sub(same, value)
            return value
    return ""


def _figure(data: dict) -> str | None:
    png = data.get("image/png")
    return hashlib.sha256("".join(png).encode()).hexdigest()[:16] if png else None


def contents(notebook: Path) -> dict:
    """{"glue": {name: text or png hash}, "shown": [text of each displayed table/markdown], "figures": [hash]}."""
    nb = json.loads(notebook.read_text())
    glued, shown, figures = {}, [], []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code" or "injected-parameters" in cell.get("metadata", {}).get("tags", []):
            continue
        for out in cell.get("outputs", []):
            data = {k.replace("application/papermill.record/", ""): v for k, v in out.get("data", {}).items()}
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            if name:
                glued[name] = _figure(data) or _text(data)
            elif _figure(data):
                figures.append(_figure(data))
            elif out.get("output_type") in ("display_data", "execute_result") and _text(data):
                shown.append(_text(data))
    return {"glue": glued, "shown": shown, "figures": figures}


def compare(before: Path, after: Path, ignore: list[str] = ()) -> dict:
    """Per chapter present in either folder: the differing glue names, tables and figures."""
    skip = [re.compile(p) for p in ignore]
    report = {}
    for stem in sorted({p.stem for p in before.glob("*.ipynb")} | {p.stem for p in after.glob("*.ipynb")}):
        a, b = before / f"{stem}.ipynb", after / f"{stem}.ipynb"
        if not (a.exists() and b.exists()):
            report[stem] = {"missing": str(b if a.exists() else a)}
            continue
        x, y = contents(a), contents(b)
        names = sorted(set(x["glue"]) | set(y["glue"]))
        kept = [n for n in names if not any(s.search(n) for s in skip)]
        glue = {n: {"before": x["glue"].get(n), "after": y["glue"].get(n)} for n in kept
                if x["glue"].get(n) != y["glue"].get(n)}
        shown = [{"before": s, "after": t} for s, t in zip(x["shown"], y["shown"]) if s != t]
        if len(x["shown"]) != len(y["shown"]):
            shown.append({"before": f"{len(x['shown'])} displayed outputs", "after": f"{len(y['shown'])}"})
        report[stem] = {"glued": len(kept), "tables": len(x["shown"]), "figures": len(x["figures"]),
                        "glue_differs": glue, "shown_differs": shown,
                        "figures_differ": sum(f != g for f, g in zip(x["figures"], y["figures"]))
                        + abs(len(x["figures"]) - len(y["figures"]))}
    return report


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("before", type=Path, help="folder of the executed notebooks before the change")
    p.add_argument("after", type=Path, help="folder of the executed notebooks after the change")
    p.add_argument("--ignore", nargs="*", default=[], help="regular expressions of glue names to leave out")
    p.add_argument("--json", type=Path, default=None, help="write the whole report here")
    a = p.parse_args(argv)
    for folder in (a.before, a.after):
        if not any(folder.glob("*.ipynb")):
            print(f"compare_books: error: no executed notebooks in {folder}", file=sys.stderr)
            return 2
    report = compare(a.before, a.after, a.ignore)
    same = True
    for stem, r in report.items():
        if "missing" in r:
            print(f"{stem}: only one book has it ({r['missing']} is missing)")
            same = False
            continue
        bad = len(r["glue_differs"]) + len(r["shown_differs"])
        same &= bad == 0
        print(f"{stem}: {r['glued']} glued values, {r['tables']} displayed tables/text, {r['figures']} figures: "
              f"{bad} differ" + (f" ({r['figures_differ']} figure(s) differ in bytes)" if r["figures_differ"] else ""))
        for name, d in r["glue_differs"].items():
            print(f"    glue {name}: {str(d['before'])[:120]!r} -> {str(d['after'])[:120]!r}")
        for d in r["shown_differs"]:
            print(f"    shown: {str(d['before'])[:160]!r}\n        -> {str(d['after'])[:160]!r}")
    if a.json:
        a.json.write_text(json.dumps(report, indent=2))
    print("identical glued values and tables" if same else "DIFFERENCES FOUND")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
