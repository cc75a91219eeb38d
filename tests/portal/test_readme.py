"""The README says what is true: every setting portal/settings.py reads is in its settings
table, and nothing in the table is gone from the settings."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _settings_read():
    source = (ROOT / "portal" / "settings.py").read_text()
    return set(re.findall(r'(?:env_(?:str|bool|number|list)|os\.environ\.get)\(\s*"([A-Z][A-Z0-9_]+)"', source))


def _settings_documented():
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("| name | default | meaning |") :]
    table = table[: table.index("\n\n")]
    return set(re.findall(r"`([A-Z][A-Z0-9_]+)`", "\n".join(line.split(" | ")[0] for line in table.splitlines())))


def test_readme_settings_table_lists_every_setting():
    read = _settings_read()
    assert len(read) > 30  # the pattern finds them at all
    assert read - _settings_documented() == set(), "settings missing from the README's table"
    assert _settings_documented() - read == set(), "README documents settings that are not read"
