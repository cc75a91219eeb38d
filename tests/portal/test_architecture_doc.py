"""docs/ARCHITECTURE.md is where a newcomer finds a step's file: every file it names must exist,
and its count must be the files it lists."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "ARCHITECTURE.md").read_text()


def _named_paths():
    return sorted(set(re.findall(r"`((?:portal|templates|static|workers|prober)/[\w./-]+\.(?:py|html|js|md))`", DOC)))


def _count_section():
    return DOC[DOC.index("## The count") :]


def test_architecture_doc_names_files_that_exist():
    named = _named_paths()
    assert len(named) >= 15
    assert [p for p in named if not (ROOT / p).is_file()] == []


def test_architecture_doc_count_matches_its_list_of_files():
    section = _count_section()
    stated = int(re.search(r"\): (\d+) —", section).group(1))
    listing = section[section.index(" —") : section.index(".\n\n")]
    names = re.findall(r"`([\w./-]+)`", listing)
    assert len(names) == len(set(names)) == stated
    assert [name for name in names if not (ROOT / name).is_file()] == []
