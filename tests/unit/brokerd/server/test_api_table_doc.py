"""The tables of served APIs in docs/brokerd.md and the README are the registry's, so they
cannot drift: every API the broker serves is listed with exactly its version range, and
nothing else is."""

from __future__ import annotations

import re

from brokerd.server import api_table
from tests.support.services import REPO_ROOT


def documented_versions() -> dict[str, str]:
    text = (REPO_ROOT / "docs" / "brokerd.md").read_text()
    section = text.split("## Kafka APIs served", 1)[1].split("\n## ", 1)[0]
    return {row[1]: row[2] for row in re.findall(r"^\| (\w+) \| (\d+(?:–\d+)?) \|", section, re.M)
            for row in [("",) + row]}


def served_versions() -> dict[str, str]:
    return dict(api_table.served())


def test_documented_api_table_is_the_served_one() -> None:
    expected = served_versions()
    table = "\n".join(f"| {name} | {versions} | |" for name, versions in sorted(
        expected.items(), key=lambda item: item[0]))
    assert documented_versions() == expected, f"docs/brokerd.md should list:\n{table}"


def test_the_readme_table_is_generated_from_the_registry() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    assert api_table.replace_table(readme) == readme, \
        "the README's API table is stale: run scripts/api-table.sh"
