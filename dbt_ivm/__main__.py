"""`python -m dbt_ivm explain model.sql --schema schema.json`: explain or refuse a model, no Spark needed."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dbt_ivm.errors import IvmError
from dbt_ivm.explain import explain


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dbt_ivm")
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("explain", help="print how fast_mv maintains a model, or why it cannot")
    ex.add_argument("sql_file", help="the model's compiled SQL (Spark dialect); - for stdin")
    ex.add_argument("--schema", required=True, help='JSON file: {"table": {"column": "spark type", ...}, ...}')
    ex.add_argument(
        "--function",
        action="append",
        default=[],
        metavar="NAME",
        help="a function the model declares deterministic (deterministic_functions); repeatable",
    )
    args = parser.parse_args(argv)
    try:
        sql = sys.stdin.read() if args.sql_file == "-" else Path(args.sql_file).read_text()
        with open(args.schema) as f:
            schema = json.load(f)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        print(explain(sql, schema, args.function))
    except IvmError as e:
        print(f"refused: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
