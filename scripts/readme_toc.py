"""The README's table of contents, made from its headings (## and ###) between the toc markers.

    python scripts/readme_toc.py          # rewrite it in README.md
    python scripts/readme_toc.py --check  # exit 1, saying so, when it does not match the headings

Anchors are GitHub's: lower case, punctuation dropped, spaces as hyphens, "-1", "-2" for repeats.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
START = "<!-- toc: made by scripts/readme_toc.py from the headings; a test checks it matches them -->"
END = "<!-- /toc -->"
HEADING = re.compile(r"^(#{2,3}) (.+?)\s*$")


def anchor(title: str, seen: dict[str, int]) -> str:
    text = re.sub(r"[^\w\- ]", "", title.replace("`", "").strip().lower()).replace(" ", "-")
    n = seen.get(text, 0)
    seen[text] = n + 1
    return text if n == 0 else f"{text}-{n}"


def headings(text: str) -> list[tuple[int, str]]:
    """(level, title) of each ## and ### heading outside code blocks, after the table itself."""
    out, fenced = [], False
    for line in text[text.index(END) :].splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := HEADING.match(line)):
            out.append((len(m.group(1)), m.group(2)))
    return out


def toc(text: str) -> str:
    seen: dict[str, int] = {}
    lines = [f"{'  ' * (level - 2)}- [{title}](#{anchor(title, seen)})" for level, title in headings(text)]
    return "\n".join(["**Contents**", "", *lines])


def with_toc(text: str) -> str:
    """``text`` with the table between the markers made anew."""
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{toc(text)}\n{END}{tail}"


def main(argv: list[str]) -> int:
    text = README.read_text(encoding="utf-8")
    wanted = with_toc(text)
    if "--check" in argv:
        if wanted != text:
            print("README.md: the table of contents does not match the headings; run scripts/readme_toc.py")
            return 1
        return 0
    README.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
