"""Rewrite tests/unit/golden/*.sql from the engine as it is now, after an intended change:

    .venv/bin/python scripts/update_golden.py

Then read the diff of the golden files: it is the change in the SQL the engine runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.unit.test_golden import CASES, GOLDEN, golden_sql


def main() -> None:
    for name in sorted(CASES):
        (GOLDEN / f"{name}.sql").write_text(golden_sql(name) + "\n")
        print(f"wrote {GOLDEN / name}.sql")


if __name__ == "__main__":
    main()
