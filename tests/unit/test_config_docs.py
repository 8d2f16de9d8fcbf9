"""The README's Configuration table lists exactly the configs fast_mv's macros read.

A config is read by a macro in `macros/` (`config.get('x')`, `config.require('x')`), or by one
of dbt's own macros that the materialization calls (`DBT_MACROS`).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READ = re.compile(r"""config\.(?:get|require)\(\s*['"]([A-Za-z_]+)['"]""")
ROW = re.compile(r"^\|\s*`([A-Za-z_]+)`\s*\|")
# dbt's macros the materialization calls -> the config each reads
DBT_MACROS = {
    "should_full_refresh": "full_refresh",
    "persist_relation_docs": "persist_docs",
    "persist_column_docs": "persist_docs",
}


def macro_configs(macros: dict[str, str]) -> set[str]:
    """The configs the macros' source reads, directly or through the dbt macros they call."""
    found: set[str] = set()
    for text in macros.values():
        found |= set(READ.findall(text))
        found |= {config for macro, config in DBT_MACROS.items() if re.search(rf"\b{macro}\(", text)}
    return found


def documented_configs(readme: str) -> list[str]:
    """The first column of the README's Configuration table, in order."""
    section = readme.split("### Configuration\n", 1)[1].split("\n#", 1)[0]
    return [m.group(1) for line in section.splitlines() if (m := ROW.match(line))]


def test_readme_table_lists_every_config_the_macros_read():
    macros = {p.name: p.read_text() for p in sorted((ROOT / "macros").glob("*.sql"))}
    documented = documented_configs((ROOT / "README.md").read_text())
    read = macro_configs(macros)
    assert len(documented) == len(set(documented)), f"a config documented twice: {documented}"
    assert read - set(documented) == set(), "read by the macros but not in README's Configuration table"
    assert set(documented) - read == set(), "in README's Configuration table but read by no macro"


def test_extraction_finds_direct_reads_and_dbt_macros():
    text = "{% set a = config.get('alpha') %}{{ config.require( \"beta\" ) }}{% if should_full_refresh() %}"
    assert macro_configs({"m.sql": text}) == {"alpha", "beta", "full_refresh"}
    readme = "x\n### Configuration\n\n| Config | Type |\n|---|---|\n| `alpha` | str |\n\n## Next\n| `gamma` | x |\n"
    assert documented_configs(readme) == ["alpha"]
