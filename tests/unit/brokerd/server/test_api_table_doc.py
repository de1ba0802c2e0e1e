"""docs/brokerd.md's table of served APIs is the registry's, so it cannot drift: every API
the broker serves is a row with exactly its version range, and no row names anything else."""

from __future__ import annotations

import re

from brokerd.server.handlers import API_TABLE
from tests.support.services import REPO_ROOT


def documented_versions() -> dict[str, str]:
    text = (REPO_ROOT / "docs" / "brokerd.md").read_text()
    section = text.split("## Kafka APIs served", 1)[1].split("\n## ", 1)[0]
    return {row[1]: row[2] for row in re.findall(r"^\| (\w+) \| (\d+(?:–\d+)?) \|", section, re.M)
            for row in [("",) + row]}


def served_versions() -> dict[str, str]:
    def camel(name: str) -> str:
        return "".join(part.capitalize() for part in name.split("_"))

    return {camel(entry.api_key.name):
            f"{entry.min_version}–{entry.max_version}" if entry.min_version != entry.max_version
            else str(entry.min_version) for entry in API_TABLE.values()}


def test_documented_api_table_is_the_served_one() -> None:
    expected = served_versions()
    table = "\n".join(f"| {name} | {versions} | |" for name, versions in sorted(
        expected.items(), key=lambda item: item[0]))
    assert documented_versions() == expected, f"docs/brokerd.md should list:\n{table}"
