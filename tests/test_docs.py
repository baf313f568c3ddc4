"""The README and docs/ keep their shape: the README is read in five minutes (at most 150 lines), its quick-start
test command is the one CI runs, every command of a shell block is written in one place only (the others link to
it), none trails off in a literal ``...``, and every relative link and ``#anchor`` in README.md, ARCHITECTURE.md
and docs/*.md names a file and a heading that exist (anchors as GitHub makes them from headings)."""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md"))]
QUICK_START = ("bash setup.sh && python train.py", "bash setup.sh && python -m pytest -q -n auto --dist loadscope")
SHELL_FENCES = ("```bash", "```sh", "```console")


def shell_commands(page: Path) -> list[tuple[int, str]]:
    """(line number, command) of each command in the page's shell blocks: continuation lines joined,
    comments and blank lines left out."""
    commands, in_shell, pending = [], False, None
    for number, line in enumerate(page.read_text().splitlines(), 1):
        if line.startswith("```"):
            in_shell = not in_shell and line.strip() in SHELL_FENCES
            continue
        if not in_shell:
            continue
        text = re.split(r"\s#\s", " " + line, maxsplit=1)[0].strip()
        if not text or text.startswith("#"):
            continue
        start, joined = pending or (number, "")
        joined = f"{joined} {text.removesuffix(chr(92)).strip()}".strip()
        pending = (start, joined) if text.endswith("\\") else None
        if pending is None:
            commands.append((start, joined))
    return commands


def github_anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation and symbols dropped, spaces to
    hyphens, ``-1``, ``-2`` ... on repeats."""
    seen: dict[str, int] = defaultdict(int)
    anchors, in_fence = set(), False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        heading = None if in_fence else re.match(r"#{1,6}\s+(.*)", line)
        if heading:
            slug = "".join(c for c in heading.group(1).strip().lower()
                           if c in " -_" or unicodedata.category(c)[0] in "LNM").replace(" ", "-")
            anchors.add(slug if seen[slug] == 0 else f"{slug}-{seen[slug]}")
            seen[slug] += 1
    return anchors


def test_readme_fits_in_150_lines():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 150


def test_the_readme_results_table_is_one_line_per_row_a_figure_and_a_link():
    """The figures' detail lives in docs/results.md; the README's table stays on one screen."""
    lines = (ROOT / "README.md").read_text().splitlines()
    table = lines[lines.index("## Results"):lines.index("## Layout")]
    rows = [line for line in table if re.match(r"\| *\d+ \|", line)]
    assert len(rows) >= 10
    for row in rows:
        assert len(row) <= 200 and len(re.findall(r"\]\(", row)) == 1, row


def test_quick_start_commands_are_in_the_readme_and_ci_runs_the_second():
    lines = (ROOT / "README.md").read_text().splitlines()
    for command in QUICK_START:
        assert command in lines, command
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert ci[-1] == QUICK_START[1]


def test_every_command_is_written_once():
    where = defaultdict(list)
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for number, command in shell_commands(page):
            where[command].append(f"{page.relative_to(ROOT)}:{number}")
    repeated = {command: places for command, places in where.items() if len(places) > 1}
    assert not repeated, f"commands written more than once (keep one, link to it): {repeated}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_command_trails_off(page):
    trailing = [(n, c) for n, c in shell_commands(page) if re.search(r"(^|\s)\.\.\.$", c)]
    assert not trailing, f"spell these commands out: {trailing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_and_anchors_exist(page):
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or (anchor and file.suffix == ".md" and anchor not in github_anchors(file)):
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: broken links {broken}"
