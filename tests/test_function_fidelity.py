"""Function fidelity on real Spark + Delta: the engine never silently changes what a Spark SQL
expression means.

The engine parses the model's SQL with sqlglot and writes it back; a round trip that changes an
expression changes the view (`to_char(ts, 'yyyy-MM')` once came back as `CAST(ts AS STRING)`,
`log10(x)` as `LOG(10, x)`, `to_json(parse_json(s))` as `s`). Here ~470 deterministic Spark 4.1
expressions over one typed Delta source with edge values are

  1. classified in pure Python (`analyze`): refused (UnsupportedView) or accepted;
  2. accepted ones are built into a few wide views (one engine build per batch of BATCH_SIZE),
     and each view column is compared, as a multiset of (id, value), with the model's own SQL
     run directly by Spark (never through sqlglot);
  3. the source gets inserts, updates of the used columns and deletes; every view is refreshed
     through the engine and compared again.

A batch whose build fails at runtime is narrowed down at once (the Spark error's column name,
else quarters) until the failing expressions are named and the rest are built and compared. A
batch whose refresh fails is narrowed down the same way on fresh copies of the source, within a
time budget (FIDELITY_DIAGNOSIS_SECONDS, default 60): what the budget leaves is reported as
groups. Refusals are checked separately (`test_refusals_are_expected`), so the fidelity test
stays strict while the list of expected refusals follows the engine.
"""

from __future__ import annotations

import datetime
import functools
import math
import os
import re
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest

from dbt_ivm import render
from dbt_ivm.analyze import analyze
from dbt_ivm.errors import UnsupportedView
from dbt_ivm.ir import TableName
from dbt_ivm.maintain import Maintainer
from tests.spark_sources import session_settings

pytestmark = pytest.mark.spark

DB = "ivm_fidelity_test"
SOURCE = "src"
# Spark's defaults: whole-stage and expression code generated, as on a cluster
WITH_CODEGEN = {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK"}
BATCH_SIZE = 120  # expressions per wide view: 4 builds and 4 refreshes for the whole suite

COLUMNS: dict[str, str] = {
    "id": "int",
    "i": "int",
    "b": "bigint",
    "d": "double",
    "dec": "decimal(12,3)",
    "s": "string",
    "js": "string",
    "ts": "timestamp",
    "dt": "date",
    "flag": "boolean",
    "arr": "array<int>",
    "m": "map<string,int>",
    "st": "struct<a:int,b:string>",
    "bin": "binary",
}
SCHEMA = {f"{DB}.{SOURCE}": COLUMNS}

# One row per tuple, in COLUMNS order. NULLs in every column (row 3 is all NULL), edge values:
# 0, -0.0, NaN, +-Infinity, extreme ints, empty string / array / map / binary, month ends and
# leap days, strings with commas, quotes, tabs and non-ASCII letters. js is JSON text or NULL
# (parse_json fails on anything else); s holds the non-JSON strings.
ROWS: tuple[str, ...] = (
    "(1, 0, 0, 0.0D, 0.000, '', '{}', TIMESTAMP '2024-01-31 00:00:00', DATE '2024-01-31', false,"
    " array(), map(), named_struct('a', 0, 'b', ''), X'')",
    '(2, -5, -9000000000, -0.0D, -123.456, \'a,b,c\', \'{"a":1,"b":[1,2,3],"c":{"d":"x"},"e":null}\','
    " TIMESTAMP '2024-02-29 23:59:59.123456', DATE '2024-02-29', true, array(1, 2, 3), map('a', 1, 'b', 2),"
    " named_struct('a', 1, 'b', 'x'), X'00FF')",
    "(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    "(4, 2147483647, 9223372036854775807, 1.0E308D, 999999999.999, 'it\\'s \"quoted\", ok', '[1,2,3]',"
    " TIMESTAMP '1970-01-01 00:00:00', DATE '1970-01-01', true, array(3, 1, 2, 3, NULL), map('k', NULL),"
    " named_struct('a', NULL, 'b', NULL), X'DEADBEEF')",
    "(5, -2147483648, CAST('-9223372036854775808' AS BIGINT), CAST('NaN' AS DOUBLE), -0.001, 'Hello World',"
    ' \'{"a":"str","b":[],"c":{}}\', TIMESTAMP \'2023-12-31 23:59:59\', DATE \'2023-12-31\', false,'
    " array(-1), map('x', -1), named_struct('a', -1, 'b', 'neg'), X'41')",
    "(6, 7, 100, 2.5D, 2.500, '  padded  ', '{\"a\":2.5,\"b\":[true,false]}', TIMESTAMP '2024-03-10 02:30:00',"
    " DATE '2024-03-31', true, array(5, 5, 5), map('a', 7), named_struct('a', 7, 'b', 'seven'), X'68656C6C6F')",
    "(7, -7, -100, -2.5D, -2.500, 'h\u00e9llo w\u00f6rld \u00df', '\"just a string\"',"
    " TIMESTAMP '2000-02-29 12:00:00', DATE '2000-02-29', false, array(NULL), map('a', NULL, 'b', 0),"
    " named_struct('a', 0, 'b', NULL), X'00')",
    "(8, 12, 123456789012, CAST('Infinity' AS DOUBLE), 12.345, 'x,y;z|w', '{\"a\":[{\"b\":1},{\"b\":2}]}',"
    " TIMESTAMP '2024-12-31 23:59:59.999999', DATE '2024-12-31', NULL, array(10, 20, 30, 40, 50),"
    " map('a', 1, 'b', 2, 'c', 3), named_struct('a', 12, 'b', 'x,y'), X'FF')",
    "(9, 1, 1, 0.1D, 0.100, 'abc', '{\"a\":1}', TIMESTAMP '2024-06-15 13:45:30.5', DATE '2024-06-30', true,"
    " array(1), map('b', 9), named_struct('a', 1, 'b', 'abc'), X'616263')",
    "(10, 3, -1, -1.0E-5D, 0.005, 'tab\\there', '[]', TIMESTAMP '1969-12-31 23:59:59', DATE '1900-01-01',"
    " false, array(2, 1), map('a', -5), named_struct('a', 3, 'b', 'tab'), NULL)",
    "(11, 100, 42, CAST('-Infinity' AS DOUBLE), -999999999.999, 'xxhelloxx', '{\"a\":null}',"
    " TIMESTAMP '2038-01-19 03:14:08', DATE '2100-02-28', true, array(0, 0), NULL, NULL, X'0102')",
    '(12, 20, 2, 1.5D, 1.500, \'Hello World\', \'{"a":1,"b":[1,2,3],"c":{"d":"x"},"e":null}\','
    " TIMESTAMP '2024-06-15 13:45:30.5', DATE '2024-02-29', NULL, NULL, map('a', 1), named_struct('a', 20, 'b', 'y'),"
    " X'00FF')",
)

# The change round: inserts, updates of used columns, deletes ({t} is the source table).
DML: tuple[str, ...] = (
    "INSERT INTO {t} VALUES"
    " (13, 5, 5, -0.0D, 0.000, 'New,Row \\'q\\'', '{{\"a\":3,\"b\":[4]}}', TIMESTAMP '2024-02-29 00:00:00',"
    " DATE '2024-02-29', true, array(7, 8), map('z', 26), named_struct('a', 5, 'b', 'five'), X'0102'),"
    " (14, NULL, NULL, CAST('NaN' AS DOUBLE), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),"
    " (15, -1, -1, -0.5D, -0.500, 'Zebra', '{{\"b\":[9,8]}}', TIMESTAMP '2020-02-29 08:00:00', DATE '2020-02-29',"
    " false, array(NULL, 4), map('a', 0), named_struct('a', -1, 'b', 'z'), X'7A')",
    "UPDATE {t} SET i = i + 1, b = b * 2, d = d * -1, dec = dec + 1, s = concat(s, ' upd'),"
    " js = concat('{{\"w\":', js, ',\"a\":9}}'), ts = ts + INTERVAL 1 DAY, dt = last_day(dt), flag = NOT flag,"
    " arr = concat(arr, array(9)), m = map_concat(m, map('u', 1)),"
    " st = named_struct('a', st.a + 1, 'b', upper(st.b)), bin = concat(bin, X'EE')"
    " WHERE id IN (2, 5, 6, 8, 9, 12)",
    "DELETE FROM {t} WHERE id IN (3, 7)",
    "UPDATE {t} SET s = NULL, d = NULL, ts = NULL, arr = NULL WHERE id = 1",
)

# Each expression reads the source as `t`; column e<k> of a view holds expression k (1-based).
EXPRESSIONS: tuple[str, ...] = (
    # --- known-bad round trips, verbatim ------------------------------------------------
    "to_char(t.ts, 'yyyy-MM')",
    "log10(t.d)",
    "to_json(parse_json(t.js))",
    # --- strings -------------------------------------------------------------------------
    "upper(t.s)",
    "lower(t.s)",
    "lcase(t.s)",
    "ucase(t.s)",
    "substr(t.s, 2, 3)",
    "substr(t.s, -3)",
    "substring(t.s, 2)",
    "substring(t.s FROM 2 FOR 3)",
    "substring(t.s, 0, 2)",
    "left(t.s, 2)",
    "right(t.s, 2)",
    "lpad(t.s, 8, '*')",
    "rpad(t.s, 8, '-=')",
    "lpad(t.s, 2)",
    "trim(t.s)",
    "ltrim(t.s)",
    "rtrim(t.s)",
    "trim(both 'x' from t.s)",
    "trim(leading 'x' from t.s)",
    "trim(trailing 'x' from t.s)",
    "trim('x' from t.s)",
    "btrim(t.s, 'x')",
    "concat(t.s, '-', t.i)",
    "concat_ws(',', t.s, 'lit', NULL, t.i)",
    "concat_ws('|', split(t.s, ','))",
    "replace(t.s, 'l', 'L')",
    "replace(t.s, 'o')",
    "regexp_replace(t.s, '[aeiou]', '#')",
    "regexp_replace(t.s, '(\\\\w+) (\\\\w+)', '$2 $1')",
    "regexp_extract(t.s, '([a-z]+)', 1)",
    "regexp_extract(t.s, '^(\\\\S+)\\\\s', 0)",
    "regexp_like(t.s, '^[A-Z]')",
    "t.s rlike 'o.*o'",
    "t.s regexp 'l{2}'",
    "t.s like '%o%'",
    "t.s like '%!%%' escape '!'",
    "t.s like 'a\\\\_%'",
    "t.s ilike 'HELLO%'",
    "t.s not like '%,%'",
    "split(t.s, ',')",
    "split(t.s, ',', 2)",
    "split_part(t.s, ',', 2)",
    "substring_index(t.s, ',', 2)",
    "format_string('%s-%05d', t.s, t.i)",
    "printf('%.3f|%s', t.d, t.flag)",
    "initcap(t.s)",
    "instr(t.s, 'l')",
    "locate('l', t.s)",
    "locate('l', t.s, 4)",
    "position('o' IN t.s)",
    "position('o', t.s, 5)",
    "repeat(t.s, 2)",
    "reverse(t.s)",
    "translate(t.s, 'lo', 'LO')",
    "soundex(t.s)",
    "levenshtein(t.s, 'hello')",
    "ascii(t.s)",
    "chr(t.i)",
    "char(65 + abs(t.i % 26))",
    "base64(t.bin)",
    "base64(t.s)",
    "unbase64(base64(t.bin))",
    "cast(unbase64(base64(t.s)) as string)",
    "hex(t.bin)",
    "hex(t.i)",
    "hex(t.s)",
    "unhex(hex(t.s))",
    "unhex(t.s)",
    "md5(t.s)",
    "sha1(t.bin)",
    "sha(t.s)",
    "sha2(t.s, 256)",
    "sha2(t.s, 512)",
    "crc32(t.bin)",
    "encode(t.s, 'UTF-8')",
    "decode(t.bin, 'ISO-8859-1')",
    "decode(encode(t.s, 'UTF-16'), 'UTF-16')",
    "overlay(t.s PLACING '##' FROM 2 FOR 3)",
    "overlay(t.s PLACING 'ZZ' FROM 3)",
    "char_length(t.s)",
    "character_length(t.s)",
    "length(t.s)",
    "len(t.s)",
    "octet_length(t.s)",
    "bit_length(t.s)",
    "t.s || '|' || t.i",
    "'it''s ' || t.s",
    "concat('tab\\there', t.s)",
    "concat('back\\\\slash', 'q\\'uote', t.s)",
    'concat("dbl", t.s)',
    "'line1\\nline2' || t.s",
    "'\\u00e9' || t.s",
    "find_in_set('b', t.s)",
    "startswith(t.s, 'He')",
    "endswith(t.s, 'ld')",
    "contains(t.s, 'o')",
    "format_number(t.d, 2)",
    "elt(2, t.s, 'two', 'three')",
    "space(3) || t.s",
    "mask(t.s)",
    "regexp_count(t.s, '[lo]')",
    "regexp_extract_all(t.s, '(\\\\w)(\\\\w)', 1)",
    "regexp_substr(t.s, '[a-z]+')",
    "url_encode(t.s)",
    # --- date and time -------------------------------------------------------------------
    "date_format(t.ts, 'yyyy-MM-dd HH:mm:ss.SSS')",
    "date_format(t.dt, 'EEEE, MMM d, yyyy')",
    "date_format(t.ts, 'yyyy-MM-dd''T''HH:mm')",
    "to_char(t.dt, 'dd/MM/yyyy')",
    "to_varchar(t.ts, 'HH:mm')",
    "to_char(t.dec, 'S999,999,999.999')",
    "to_date(date_format(t.ts, 'dd.MM.yyyy'), 'dd.MM.yyyy')",
    "to_date(concat(cast(year(t.dt) as string), '-02-29'), 'yyyy-MM-dd')",
    "to_date(t.ts)",
    "to_timestamp(date_format(t.ts, 'yyyyMMddHHmmss'), 'yyyyMMddHHmmss')",
    "to_timestamp(t.dt)",
    "to_timestamp(t.s)",
    "unix_timestamp(t.ts)",
    "unix_timestamp(date_format(t.ts, 'yyyy/MM/dd'), 'yyyy/MM/dd')",
    "from_unixtime(t.i)",
    "from_unixtime(t.i, 'yyyy-MM-dd HH:mm')",
    "to_unix_timestamp(t.ts)",
    "to_unix_timestamp(date_format(t.dt, 'MM/dd/yyyy'), 'MM/dd/yyyy')",
    "date_trunc('MONTH', t.ts)",
    "date_trunc('hour', t.ts)",
    "date_trunc('WEEK', t.ts)",
    "trunc(t.dt, 'MM')",
    "trunc(t.dt, 'year')",
    "date_add(t.dt, 1)",
    "date_add(t.dt, t.i % 100)",
    "date_sub(t.dt, 30)",
    "dateadd(t.dt, 7)",
    "dateadd(DAY, 7, t.ts)",
    "date_add(MONTH, 1, t.dt)",
    "datediff(t.dt, DATE '2024-01-01')",
    "datediff(DAY, t.ts, TIMESTAMP '2024-01-01 00:00:00')",
    "date_diff(t.dt, DATE '2000-01-01')",
    "timestampadd(HOUR, 5, t.ts)",
    "timestampadd(MONTH, -1, t.ts)",
    "timestampdiff(MINUTE, TIMESTAMP '2024-01-01 00:00:00', t.ts)",
    "timestampdiff(MONTH, t.dt, DATE '2025-01-01')",
    "add_months(t.dt, 1)",
    "add_months(t.dt, -12)",
    "months_between(t.ts, TIMESTAMP '2024-01-01 00:00:00')",
    "months_between(t.dt, DATE '2020-02-29', false)",
    "last_day(t.dt)",
    "next_day(t.dt, 'MON')",
    "next_day(t.dt, 'Friday')",
    "year(t.dt)",
    "month(t.ts)",
    "day(t.dt)",
    "dayofmonth(t.ts)",
    "dayofweek(t.dt)",
    "dayofyear(t.dt)",
    "weekday(t.dt)",
    "weekofyear(t.dt)",
    "quarter(t.ts)",
    "hour(t.ts)",
    "minute(t.ts)",
    "second(t.ts)",
    "extract(YEAR FROM t.ts)",
    "extract(DOW FROM t.dt)",
    "extract(SECOND FROM t.ts)",
    "extract(WEEK FROM t.dt)",
    "date_part('MONTH', t.ts)",
    "make_date(2000 + t.i % 20, 2, 29)",
    "make_date(year(t.dt), month(t.dt), 1)",
    "make_timestamp(2024, 2, 29, 12, 30, 45.5)",
    "make_timestamp(year(t.dt), month(t.dt), day(t.dt), 1, 2, 3)",
    "cast(t.ts as date)",
    "cast(t.ts as string)",
    "cast(t.dt as string)",
    "cast(t.dt as timestamp)",
    "datediff(DATE '2024-01-01', t.dt) + 0",
    "TIMESTAMP '2024-01-01 12:00:00' > t.ts",
    "t.ts + INTERVAL 1 DAY",
    "t.ts - INTERVAL '1-2' YEAR TO MONTH",
    "t.dt + INTERVAL 3 MONTH",
    "t.ts + INTERVAL '1 02:03:04' DAY TO SECOND",
    "t.ts - INTERVAL 90 MINUTES",
    "cast(t.dt - DATE '2024-01-01' as string)",
    "timestamp_seconds(t.i)",
    "unix_date(t.dt)",
    "unix_seconds(t.ts)",
    "unix_millis(t.ts)",
    "date_from_unix_date(t.i % 100000)",
    "from_utc_timestamp(t.ts, 'America/New_York')",
    "to_utc_timestamp(t.ts, 'Asia/Tokyo')",
    "try_to_timestamp(t.s, 'yyyy-MM-dd')",
    "to_timestamp_ntz(t.ts)",
    "monthname(t.dt)",
    "dayname(t.dt)",
    # --- math ----------------------------------------------------------------------------
    "log10(t.i)",
    "log2(t.d)",
    "ln(t.d)",
    "log(2, t.d)",
    "log(t.d)",
    "exp(t.d)",
    "pow(t.d, 2)",
    "power(t.i, 0.5)",
    "sqrt(t.d)",
    "cbrt(t.d)",
    "signum(t.d)",
    "sign(t.i)",
    "abs(t.i)",
    "abs(t.dec)",
    "abs(t.d)",
    "ceil(t.d)",
    "ceiling(t.dec)",
    "floor(t.dec)",
    "ceil(t.dec, 1)",
    "floor(t.d, -1)",
    "round(t.d, 1)",
    "round(t.dec, 2)",
    "round(t.d)",
    "round(t.i, -1)",
    "bround(t.d, 0)",
    "bround(t.dec, 1)",
    "mod(t.i, 3)",
    "t.i % 3",
    "t.d % 2",
    "pmod(t.i, 3)",
    "pmod(t.d, 2.5)",
    "t.i div 2",
    "div(t.b, 3)",
    "t.i / 2",
    "t.i / 0",
    "t.b / t.i",
    "greatest(t.i, 0, t.b)",
    "least(t.d, 0.5)",
    "greatest(t.s, 'b')",
    "width_bucket(t.d, 0, 10, 5)",
    "factorial(t.i)",
    "hypot(t.d, 3)",
    "sin(t.d)",
    "cos(t.i)",
    "tan(t.d)",
    "atan2(t.d, t.i)",
    "degrees(t.d)",
    "radians(t.i)",
    "bin(t.b)",
    "conv(t.i, 10, 2)",
    "conv(hex(t.i), 16, 10)",
    "try_divide(t.i, 0)",
    "try_divide(t.dec, t.i)",
    "try_add(t.i, 2147483647)",
    "try_multiply(t.b, 2)",
    "try_subtract(t.i, 1)",
    "try_mod(t.i, 0)",
    "1.5BD * t.i",
    "100L + t.i",
    "1e3 + t.i",
    "-t.i",
    "-(t.d)",
    "-t.dec",
    "-0.0D",
    "t.d * -0.0D",
    "atan2(-0.0D, -1.0D)",
    "atan2(t.d * -1, -1.0D)",
    "0.1 + 0.2",
    "0.1D + 0.2D",
    "t.i + t.b",
    "t.i * t.d",
    "t.dec * t.dec",
    "t.dec / 3",
    "e() + t.i",
    "pi() * t.d",
    "rint(t.d)",
    "expm1(t.d)",
    "log1p(t.d)",
    "positive(t.i)",
    "negative(t.i)",
    "shiftleft(t.i, 2)",
    "t.i & 6",
    "t.i | 1",
    "t.i ^ 3",
    "~t.i",
    "t.i >> 1",
    "shiftrightunsigned(t.i, 1)",
    "bit_count(t.i)",
    "isnan(t.d)",
    # --- JSON and VARIANT ----------------------------------------------------------------
    "get_json_object(t.js, '$.a')",
    "get_json_object(t.js, '$.b[1]')",
    "get_json_object(t.js, '$.c.d')",
    "get_json_object(t.s, '$.a')",
    "json_tuple(t.js, 'a')",
    "from_json(t.js, 'a INT, b ARRAY<INT>')",
    "from_json(t.js, 'struct<a:string,c:map<string,string>>')",
    "from_json(t.js, 'map<string,string>')",
    "to_json(from_json(t.js, 'a INT, b ARRAY<INT>'))",
    "parse_json(t.js)",
    "try_parse_json(t.s)",
    "variant_get(parse_json(t.js), '$.a', 'string')",
    "variant_get(parse_json(t.js), '$.b[0]', 'string')",
    "try_variant_get(parse_json(t.js), '$.a', 'int')",
    'schema_of_json(\'{"a":1,"b":[1.5]}\')',
    "schema_of_variant(parse_json(t.js))",
    "is_variant_null(variant_get(parse_json(t.js), '$.a'))",
    "json_array_length(t.js)",
    "json_object_keys(t.js)",
    "to_json(t.st)",
    "to_json(t.m)",
    "to_json(t.arr)",
    "to_json(named_struct('x', t.i, 'y', t.s))",
    "to_json(struct(t.i, t.d))",
    # --- arrays --------------------------------------------------------------------------
    "array(t.i, t.id, 3)",
    "array_size(t.arr)",
    "size(t.arr)",
    "cardinality(t.arr)",
    "element_at(t.arr, 1)",
    "element_at(t.arr, -1)",
    "t.arr[0]",
    "t.arr[5]",
    "get(t.arr, 0)",
    "get(t.arr, 10)",
    "try_element_at(t.arr, 2)",
    "array_contains(t.arr, 3)",
    "array_distinct(t.arr)",
    "array_sort(t.arr)",
    "array_sort(t.arr, (l, r) -> case when l is null then 1 when r is null then -1"
    " when l < r then 1 when l > r then -1 else 0 end)",
    "sort_array(t.arr)",
    "sort_array(t.arr, false)",
    "array_join(t.arr, ',')",
    "array_join(t.arr, ',', 'NULL')",
    "array_max(t.arr)",
    "array_min(t.arr)",
    "array_position(t.arr, 3)",
    "array_remove(t.arr, 3)",
    "array_union(t.arr, array(1, 99))",
    "array_intersect(t.arr, array(1, 2))",
    "array_except(t.arr, array(1))",
    "arrays_overlap(t.arr, array(2, 50))",
    "flatten(array(t.arr, array(0)))",
    "slice(t.arr, 2, 2)",
    "slice(t.arr, -2, 2)",
    "sequence(1, 3)",
    "sequence(0, abs(t.i % 5))",
    "sequence(t.dt, date_add(t.dt, 2))",
    "transform(t.arr, x -> x * 2)",
    "transform(t.arr, (x, i) -> x + i)",
    "transform(t.arr, x -> x + t.i)",
    "filter(t.arr, x -> x > 1)",
    "filter(t.arr, x -> x is not null)",
    "exists(t.arr, x -> x = 3)",
    "forall(t.arr, x -> x > 0)",
    "aggregate(t.arr, 0, (acc, x) -> acc + coalesce(x, 0))",
    "aggregate(t.arr, 0L, (acc, x) -> acc + x, acc -> acc * 10)",
    "reduce(t.arr, 0, (a, x) -> a + coalesce(x, 0))",
    "zip_with(t.arr, array(1, 2, 3), (a, b) -> a * b)",
    "array_append(t.arr, 9)",
    "array_prepend(t.arr, 0)",
    "array_compact(t.arr)",
    "array_insert(t.arr, 1, 100)",
    "array_repeat(t.s, 2)",
    "arrays_zip(t.arr, array('a', 'b'))",
    "concat(t.arr, array(7))",
    "reverse(t.arr)",
    # --- maps ----------------------------------------------------------------------------
    "map('k', t.i, 'j', t.id)",
    "map_keys(t.m)",
    "map_values(t.m)",
    "map_contains_key(t.m, 'a')",
    "element_at(t.m, 'a')",
    "t.m['a']",
    "try_element_at(t.m, 'zz')",
    "map_from_arrays(array('x', 'y'), array(t.i, t.id))",
    "str_to_map('a:1,b:2')",
    "str_to_map(t.s, ',', ':')",
    "map_entries(t.m)",
    "map_concat(t.m, map('new', 1))",
    "map_filter(t.m, (k, v) -> v > 0)",
    "transform_values(t.m, (k, v) -> v * 10)",
    "transform_keys(t.m, (k, v) -> upper(k))",
    "map_from_entries(array(struct('a', t.i)))",
    "size(t.m)",
    # --- structs -------------------------------------------------------------------------
    "struct(t.i, t.s)",
    "named_struct('x', t.i, 'y', t.s)",
    "t.st.a",
    "t.st.b",
    "t.st",
    "t.st['a']",
    "named_struct('n', named_struct('m', t.i)).n.m",
    "struct(t.i AS k, t.s AS v).v",
    # --- conditionals --------------------------------------------------------------------
    "case when t.i > 0 then 'pos' when t.i < 0 then 'neg' else 'zero' end",
    "case t.i when 0 then 'zero' when 7 then 'seven' end",
    "if(t.flag, t.s, 'no')",
    "coalesce(t.s, t.js, 'none')",
    "coalesce(t.i, t.b)",
    "nvl(t.d, -1.0D)",
    "nvl2(t.s, 'has', 'null')",
    "nullif(t.i, 0)",
    "ifnull(t.s, '?')",
    "nanvl(t.d, 0.0D)",
    "decode(t.i, 0, 'zero', 7, 'seven', 'other')",
    "decode(t.i, NULL, 'null!', 0, 'zero', 'other')",
    "t.i <=> NULL",
    "t.s <=> 'abc'",
    "t.i is distinct from 7",
    "t.i is not distinct from 0",
    "t.i between -5 and 5",
    "t.i not between 0 and 10",
    "t.dt between DATE '2024-01-01' and DATE '2024-12-31'",
    "t.i in (0, 7, NULL)",
    "t.i not in (0, 7)",
    "t.s in ('abc', 'Hello World')",
    "t.i not in (1, NULL)",
    "t.flag and t.i > 0",
    "t.flag or t.i is null",
    "not t.flag",
    "t.flag is true",
    "t.flag is not false",
    "t.flag is unknown",
    "nullifzero(t.i)",
    "zeroifnull(t.i)",
    "equal_null(t.i, 0)",
    # --- casts and try_ functions --------------------------------------------------------
    "cast(t.s as int)",
    "cast(t.d as int)",
    "cast(t.d as bigint)",
    "cast(t.s as double)",
    "cast(t.i as decimal(10,2))",
    "cast(t.d as decimal(12,4))",
    "cast(t.dec as string)",
    "cast(t.d as string)",
    "cast(t.d as float)",
    "cast(t.i as tinyint)",
    "cast(t.i as smallint)",
    "cast(t.s as date)",
    "cast(t.s as timestamp)",
    "cast(t.dt as timestamp_ntz)",
    "cast(t.ts as timestamp_ntz)",
    "cast(t.ts as bigint)",
    "cast(t.i as boolean)",
    "cast(t.s as boolean)",
    "cast(t.s as binary)",
    "cast(t.flag as int)",
    "cast(t.arr as array<string>)",
    "cast(t.st as string)",
    "cast(t.m as string)",
    "cast(t.arr as string)",
    "cast(t.bin as string)",
    "cast('1.5' as decimal(3,1))",
    "t.i::bigint",
    "t.d::string",
    "t.s::int",
    "try_cast(t.s as int)",
    "try_cast(t.s as date)",
    "bigint(t.d)",
    "double(t.s)",
    "string(t.i)",
    "date(t.ts)",
    "to_number(cast(abs(t.i % 1000) as string), '999')",
    "try_to_number(t.s, '999.99')",
    # --- hashing -------------------------------------------------------------------------
    "hash(t.s)",
    "hash(t.i, t.s, t.d)",
    "hash(t.st)",
    "xxhash64(t.s)",
    "xxhash64(t.arr)",
    # --- misc ----------------------------------------------------------------------------
    "typeof(t.dec)",
    "typeof(t.i / 2)",
    "typeof(NULL)",
    "isnull(t.s)",
    "isnotnull(t.ts)",
    "t.s is null",
    "t.arr is not null",
    "cast(NULL as int)",
    # --- refused by design: generators and non-deterministic functions -------------------
    "explode(t.arr)",
    "inline(array(named_struct('x', t.i)))",
    "rand(42)",
    "shuffle(t.arr)",
)

# Refused by design: generators (a row of the source becomes several rows of the view) and
# non-deterministic functions (a recompute would give other values). Adjust when the engine's
# scope changes; the fidelity test does not depend on this list.
# Refused at build by the type of the view column (MAP or VARIANT: see `render.ensure_groupable`).
EXPECTED_TYPE_REFUSALS: frozenset[str] = frozenset(
    {
        "map('k', t.i, 'j', t.id)",
        "map_from_arrays(array('x', 'y'), array(t.i, t.id))",
        "map_concat(t.m, map('new', 1))",
        "transform_values(t.m, (k, v) -> v * 10)",
        "transform_keys(t.m, (k, v) -> upper(k))",
        "map_from_entries(array(struct('a', t.i)))",
        "parse_json(t.js)",
        "try_parse_json(t.s)",
        "str_to_map('a:1,b:2')",
        "str_to_map(t.s, ',', ':')",
        "from_json(t.js, 'map<string,string>')",
        "from_json(t.js, 'struct<a:string,c:map<string,string>>')",
    }
)
EXPECTED_REFUSALS: frozenset[str] = frozenset(
    {
        "json_tuple(t.js, 'a')",
        "explode(t.arr)",
        "inline(array(named_struct('x', t.i)))",
        "rand(42)",
        "shuffle(t.arr)",
    }
)


def column(k: int) -> str:
    """The view column of expression k (1-based position in EXPRESSIONS)."""
    return f"e{k}"


def single_sql(expr: str, table: str = SOURCE) -> str:
    return f"select t.id, {expr} as e from {DB}.{table} t"


def model_sql(indexed: Sequence[tuple[int, str]], table: str = SOURCE) -> str:
    cols = ",\n  ".join(f"{expr} as {column(k)}" for k, expr in indexed)
    return f"select t.id,\n  {cols}\nfrom {DB}.{table} t"


@dataclass(frozen=True)
class Classification:
    accepted: tuple[tuple[int, str], ...]
    refused: dict[str, str]  # expression -> the refusal's message
    errors: dict[str, str]  # expression -> an exception other than UnsupportedView (engine bug)


@functools.lru_cache(maxsize=1)
def classify() -> Classification:
    """Pure Python: which expressions the engine accepts (no Spark)."""
    accepted, refused, errors = [], {}, {}
    for k, expr in enumerate(EXPRESSIONS, 1):
        try:
            analyze(single_sql(expr), SCHEMA)
        except UnsupportedView as e:
            refused[expr] = str(e)
        except Exception as e:  # a crash of analyze is reported, not hidden
            errors[expr] = f"{type(e).__name__}: {first_line(e)}"
        else:
            accepted.append((k, expr))
    return Classification(tuple(accepted), refused, errors)


def first_line(e: BaseException) -> str:
    """The informative line of an error: Spark's innermost [ERROR_CLASS] message (the cause of a
    TASK_WRITE_FAILED, say), not py4j's preamble."""
    text = str(e).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    classed = []
    for line in lines:
        found = re.search(r"\[[A-Z][A-Z0-9_]+(\.[A-Z0-9_]+)*\].*", line)
        if found:
            classed.append((line.startswith("Caused by:"), found.group(0)[:400]))
    causes = [message for caused, message in classed if caused]
    if causes:
        return causes[-1]
    if classed:
        return classed[0][1]
    for line in lines:
        if "Exception:" in line:
            return line[:400]
    return lines[0][:400] if lines else type(e).__name__


# --- comparable values ------------------------------------------------------------------


# Spark counts -0.0 and 0.0 as one value when it groups or compares rows, and the project
# documents that a view may hold 0.0 where the model gives -0.0 (README, ARCHITECTURE.md). A
# floating-point -0.0 therefore equals 0.0 here; the sign is still checked wherever it changes
# another value (atan2(-0.0, -1), a cast to string, a refresh that must find the stored row).
NEGATIVE_ZERO_IS_ZERO = True


def comparable(value: Any) -> Any:
    """A hashable, exact form of a collected value: NaN equals NaN, decimals keep their scale,
    structs keep their field names, maps ignore entry order (see NEGATIVE_ZERO_IS_ZERO)."""
    if value is None:
        return None
    if isinstance(value, float):
        if math.isnan(value):
            return ("float", "NaN")
        return ("float", repr(0.0 if NEGATIVE_ZERO_IS_ZERO and value == 0 else value))
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, Decimal):
        return ("decimal", str(value))
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, (bytes, bytearray)):
        return ("binary", bytes(value).hex())
    if isinstance(value, datetime.datetime):
        return ("timestamp", value.isoformat(), str(value.tzinfo))
    if isinstance(value, datetime.date):
        return ("date", value.isoformat())
    if isinstance(value, datetime.timedelta):
        return ("interval", value.total_seconds())
    if isinstance(value, dict):
        return ("map", tuple(sorted(((comparable(k), comparable(v)) for k, v in value.items()), key=repr)))
    fields = getattr(value, "__fields__", None)
    if fields is not None:  # a Row: a struct
        return ("struct", tuple((f, comparable(v)) for f, v in zip(fields, value, strict=True)))
    if isinstance(value, (list, tuple)):
        return ("array", tuple(comparable(v) for v in value))
    if hasattr(value, "toJson"):  # VariantVal
        return ("variant", value.toJson())
    return (type(value).__name__, repr(value))


def shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 160 else text[:157] + "..."


def column_multisets(rows: list[Any], columns: Sequence[str]) -> dict[str, Counter]:
    out: dict[str, Counter] = {c: Counter() for c in columns}
    for row in rows:
        d = row.asDict(recursive=False)
        for c in columns:
            out[c][(d["id"], comparable(d[c]))] += 1
    return out


def raw_values(rows: list[Any], col: str) -> dict[Any, list[Any]]:
    values: dict[Any, list[Any]] = {}
    for row in rows:
        values.setdefault(row["id"], []).append(row[col])
    return values


# --- the run ----------------------------------------------------------------------------

Group = tuple[tuple[int, str], ...]  # expressions built together into one view


@dataclass
class Findings:
    mismatches: dict[tuple[str, str], str] = field(default_factory=dict)  # (phase, expr): the difference
    runtime: dict[str, str] = field(default_factory=dict)  # accepted, then failed in Spark: expr -> error
    undiagnosed: list[str] = field(default_factory=list)  # refresh failures the budget left as groups
    invalid: list[str] = field(default_factory=list)  # the model SQL itself fails (a bug of the suite)
    compared: dict[str, set[str]] = field(default_factory=dict)  # phase -> expressions compared
    log: list[str] = field(default_factory=list)
    refused_at_build: dict[str, str] = field(default_factory=dict)  # by the output type check: expr -> message

    def report(self) -> str:
        parts = []
        if self.invalid:
            parts.append("expressions that fail in Spark directly (fix the suite):\n  " + "\n  ".join(self.invalid))
        if self.mismatches:
            parts.append(
                f"{len(self.mismatches)} silent differences between the view and the model's own SQL:\n  "
                + "\n  ".join(f"[{phase}] {expr}: {diff}" for (phase, expr), diff in self.mismatches.items())
            )
        if self.runtime:
            parts.append(
                f"{len(self.runtime)} accepted expressions whose view fails at runtime:\n  "
                + "\n  ".join(f"{expr}: {error}" for expr, error in self.runtime.items())
            )
        if self.undiagnosed:
            parts.append(
                "groups whose refresh fails, not narrowed down within the diagnosis budget "
                f"(set {BUDGET_ENV} to search longer):\n  " + "\n  ".join(self.undiagnosed)
            )
        return "\n\n".join(parts)


BUDGET_ENV = "FIDELITY_DIAGNOSIS_SECONDS"
PARALLEL = 3  # views built or refreshed at once (the engine guards concurrent runs on one session)


def create_source(spark: Any, table: str, rows: Sequence[str] = ROWS) -> None:
    cols = ", ".join(f"{c} {t}" for c, t in COLUMNS.items())
    spark.sql(f"DROP TABLE IF EXISTS {DB}.{table}")
    spark.sql(f"CREATE TABLE {DB}.{table} ({cols}) USING DELTA TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    spark.sql(f"INSERT INTO {DB}.{table} VALUES " + ",\n".join(rows))


def apply_changes(spark: Any, table: str) -> None:
    for statement in DML:
        spark.sql(statement.format(t=f"{DB}.{table}"))


def materialize(spark_db: Any, name: str, sql: str) -> str:
    return Maintainer(spark_db, TableName(DB, name), sql, refresh_policy="incremental").materialize().action


def compare(spark: Any, name: str, group: Group, sql: str, phase: str, findings: Findings) -> None:
    """The view against the model's own SQL run by Spark, per column, as multisets of (id, value)."""
    expected_df = spark.sql(sql)
    actual_df = spark.sql(f"SELECT * FROM {DB}.{name}")
    expected_rows, actual_rows = expected_df.collect(), actual_df.collect()
    expected_types = {f.name: f.dataType.simpleString() for f in expected_df.schema.fields}
    actual_types = {f.name: f.dataType.simpleString() for f in actual_df.schema.fields}
    columns = [column(k) for k, _ in group if column(k) in actual_types]
    expected = column_multisets(expected_rows, columns)
    actual = column_multisets(actual_rows, columns)
    for k, expr in group:
        col = column(k)
        findings.compared.setdefault(phase, set()).add(expr)
        if col not in actual_types:
            findings.mismatches[(phase, expr)] = f"column {col} is missing from the view"
            continue
        problems = []
        if expected_types[col] != actual_types[col]:
            problems.append(f"type {actual_types[col]} in the view, {expected_types[col]} from the model")
        if expected[col] != actual[col]:
            want, got = raw_values(expected_rows, col), raw_values(actual_rows, col)
            ids = sorted(
                {i for i, _ in (expected[col] - actual[col]) + (actual[col] - expected[col])},
                key=lambda i: (i is None, i),
            )
            problems += [f"id={i}: model={shown(want.get(i))} view={shown(got.get(i))}" for i in ids[:4]]
            if len(ids) > 4:
                problems.append(f"(+{len(ids) - 4} more ids)")
        if problems:
            findings.mismatches[(phase, expr)] = "; ".join(problems)


def model_types(spark: Any, group: Sequence[tuple[int, str]]) -> dict[int, str]:
    """Each expression's Spark type, from the model's own SQL (analysis only, nothing runs)."""
    fields = {f.name: f.dataType.simpleString() for f in spark.sql(model_sql(group)).schema.fields}
    return {k: fields[column(k)] for k, _ in group}


def check_model_sql(spark: Any, indexed: Sequence[tuple[int, str]], findings: Findings) -> list[tuple[int, str]]:
    """Each expression must run in Spark as written; an invalid one is a bug of the suite."""
    try:
        spark.sql(model_sql(indexed)).collect()
        return list(indexed)
    except Exception:  # find which expression Spark rejects
        pass
    valid = []
    for k, expr in indexed:
        try:
            spark.sql(single_sql(expr)).collect()
            valid.append((k, expr))
        except Exception as e:
            findings.invalid.append(f"{expr}: {first_line(e)}")
    return valid


def trial(
    spark: Any, spark_db: Any, table: str, groups: Sequence[Group], types: dict[int, str], findings: Findings
) -> tuple[list[tuple[Group, str, str]], int]:
    """On a fresh copy of the source: build one view per group and compare (a build that fails is
    narrowed down at once, on the same source); apply the change round, refresh every view and
    compare. Returns the groups whose refresh failed, (group, phase, error), and the views made."""
    create_source(spark, table)
    views: dict[Group, tuple[str, str]] = {}

    def view(group: Group) -> tuple[str, str]:
        if group not in views:
            views[group] = (f"{table}_v{len(views)}", model_sql(group, table))
        return views[group]

    def run_all(todo: Sequence[Group], phase: str) -> tuple[list[Group], list[tuple[Group, str, str]]]:
        def one(group: Group) -> tuple[Group, str | None, str]:
            name, sql = views[group]
            try:
                return group, None, materialize(spark_db, name, sql)
            except Exception as e:  # the runtime error is the finding
                return group, first_line(e), ""

        for group in todo:
            view(group)  # named in order, before the threads start
        done, failed = [], []
        with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
            for group, error, action in pool.map(one, todo):
                if error is not None:
                    failed.append((group, phase, error))
                    continue
                if phase == "refresh" and action != "refreshed":
                    findings.log.append(f"view {views[group][0]} was {action}, not refreshed")
                done.append(group)
        for group in done:
            compare(spark, views[group][0], group, views[group][1], phase, findings)
        return done, failed

    pending, built = list(groups), []
    while pending:
        done, failed = run_all(pending, "build")
        built += done
        pending = [g for failure in failed for g in narrow(failure, types, findings)]
    apply_changes(spark, table)
    _, failed = run_all(built, "refresh")
    return failed, len(views)


def split(group: Group, parts: int = 4) -> list[Group]:
    size = -(-len(group) // parts)
    return [group[i : i + size] for i in range(0, len(group), size)]


def narrow(failure: tuple[Group, str, str], types: dict[int, str], findings: Findings) -> list[Group]:
    """The groups to try next for a failed group; a lone expression that fails is a culprit.

    A Spark error that names a view column (`e17`) names its expression: that one is a culprit,
    the others of the same type are tried alone, the rest together. Otherwise: quarters.
    """
    group, phase, error = failure
    if len(group) == 1:
        findings.runtime[group[0][1]] = f"[{phase}] {error}"
        return []
    named_k = {int(n) for n in re.findall(r"\be(\d+)\b", error)} & {k for k, _ in group}
    if not named_k:
        return split(group)
    for k, expr in group:
        if k in named_k:
            findings.runtime[expr] = f"[{phase}] {error}"
    suspect_types = {types[k] for k in named_k}
    alone = [(item,) for item in group if item[0] not in named_k and types[item[0]] in suspect_types]
    rest = tuple(item for item in group if item[0] not in named_k and types[item[0]] not in suspect_types)
    return alone + ([rest] if rest else [])


def batches(items: Sequence[tuple[int, str]], size: int = BATCH_SIZE) -> list[Group]:
    return [tuple(items[i : i + size]) for i in range(0, len(items), size)]


@pytest.fixture(scope="module")
def fidelity(spark, spark_db):
    """Build every batch of accepted expressions, compare; change the source, refresh, compare.
    Batches that fail at runtime are narrowed down on fresh copies of the source. With generated
    code, as a cluster runs them (the suite's session compiles none: conftest.TEST_SETTINGS)."""
    with session_settings(spark, WITH_CODEGEN):
        yield from _fidelity(spark, spark_db)


def _fidelity(spark: Any, spark_db: Any) -> Iterator[Findings]:
    started = time.monotonic()
    budget = float(os.environ.get(BUDGET_ENV, "60"))
    spark.sql(f"DROP DATABASE IF EXISTS {DB} CASCADE")
    spark.sql(f"CREATE DATABASE {DB}")
    create_source(spark, SOURCE)
    findings = Findings()
    accepted = check_model_sql(spark, classify().accepted, findings)
    types = model_types(spark, accepted)
    for k, expr in list(accepted):  # the engine's check of the view's column types, before any build
        try:
            render.ensure_groupable({column(k): types[k]})
        except UnsupportedView as e:
            findings.refused_at_build[expr] = str(e)
            accepted.remove((k, expr))
    trial_started = time.monotonic()
    failures, made = trial(spark, spark_db, SOURCE, batches(accepted), types, findings)
    main_done = time.monotonic()
    per_view = (main_done - trial_started) / max(made, 1)  # what one more view costs, roughly
    rounds = 0
    while failures:
        groups = [g for failure in failures for g in narrow(failure, types, findings)]
        if not groups:
            break
        if time.monotonic() - main_done + per_view * len(groups) > budget:
            findings.undiagnosed += [" | ".join(expr for _, expr in g) for g in groups]
            break
        rounds += 1
        failures, _ = trial(spark, spark_db, f"probe{rounds}", groups, types, findings)
    print(
        f"\nfidelity: {len(accepted)} accepted expressions, {len(batches(accepted))} views: "
        f"{main_done - started:.0f}s; {rounds} diagnosis rounds: {time.monotonic() - main_done:.0f}s"
    )
    for line in findings.log:
        print("  note:", line)
    yield findings
    spark.sql(f"DROP DATABASE IF EXISTS {DB} CASCADE")


# --- the tests --------------------------------------------------------------------------


def test_suite_size_and_refusals():
    """The suite's breadth, and every refusal with its message (run with -s to read them)."""
    assert len(EXPRESSIONS) == len(set(EXPRESSIONS)), [e for e, n in Counter(EXPRESSIONS).items() if n > 1]
    assert len(EXPRESSIONS) >= 150, len(EXPRESSIONS)
    c = classify()
    print(
        f"\n{len(EXPRESSIONS)} expressions: {len(c.accepted)} accepted, {len(c.refused)} refused, "
        f"{len(c.errors)} crashed the analysis"
    )
    for expr, message in c.refused.items():
        print(f"  refused  {expr}\n           {message}")
    for expr, message in c.errors.items():
        print(f"  CRASHED  {expr}\n           {message}")
    assert not c.errors, "analyze must accept or refuse (UnsupportedView), never crash:\n" + "\n".join(
        f"  {e}: {m}" for e, m in c.errors.items()
    )


def test_refusals_are_expected():
    """Only generators, non-deterministic functions and aggregates may be refused; this list
    follows the engine's scope (adjust EXPECTED_REFUSALS when that scope changes)."""
    c = classify()
    refused = set(c.refused)
    unexpected = sorted(refused - EXPECTED_REFUSALS, key=EXPRESSIONS.index)
    accepted = sorted(EXPECTED_REFUSALS - refused, key=EXPRESSIONS.index)
    if unexpected or accepted:
        lines = [f"refused, but deterministic scalar Spark ({len(unexpected)}):"]
        lines += [f"  {e}\n      {c.refused[e]}" for e in unexpected]
        lines += [f"expected to be refused, but accepted ({len(accepted)}):"]
        lines += [f"  {e}" for e in accepted]
        pytest.fail("\n".join(lines), pytrace=False)


def test_accepted_expressions_mean_what_spark_means(fidelity):
    """Strict: every accepted expression gives, in the view, exactly what Spark gives for the
    model's own SQL, after the build and after a refresh of inserts, updates and deletes;
    none fails at runtime."""
    report = fidelity.report()
    if report:
        pytest.fail(report, pytrace=False)
    missing = EXPECTED_TYPE_REFUSALS - set(fidelity.refused_at_build)
    assert not missing, f"MAP or VARIANT columns the engine built instead of refusing: {sorted(missing)}"
    assert all("cannot store exactly" in m for m in fidelity.refused_at_build.values()), fidelity.refused_at_build
    valid = {expr for _, expr in classify().accepted} - set(fidelity.refused_at_build)
    assert fidelity.compared.get("build") == valid
    assert fidelity.compared.get("refresh") == valid
    assert not fidelity.log, "the change round must be applied by a refresh, not a rebuild:\n" + "\n".join(fidelity.log)
