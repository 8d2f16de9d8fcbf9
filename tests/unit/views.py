"""The small schema and views the unit tests of the SQL builders share."""

from __future__ import annotations

from dbt_ivm.ir import TableName

SCHEMA = {
    "db.o": {"id": "int", "cust": "int", "amt": "double", "note": "string"},
    "db.c": {"cid": "int", "name": "string"},
}
JOIN = "select o.id, c.name from db.o o join db.c c on o.cust = c.cid where o.amt > 1"
SELF = "select a.id, b.id as id2 from db.o a join db.o b on a.cust = b.id"
BACKING = TableName("db", "v__ivm")
AGG = (
    "select o.cust, c.name, count(*) as n, sum(o.amt) as total, avg(o.amt) as mean, max(o.amt) as top, "
    "count(distinct o.note) as notes from db.o o join db.c c on o.cust = c.cid "
    "where o.id > 0 group by o.cust, c.name having sum(o.amt) > 10"
)
GLOBAL = "select count(*) as n, min(amt) as low from db.o"
OLD, NEW = {"db.o": 3, "db.c": 5}, {"db.o": 4, "db.c": 7}
# Outer joins: the change climbs the join tree, with NS-compensation of the padded rows.
OUTER_SCHEMA = {**SCHEMA, "db.r": {"rid": "int", "cid": "int", "label": "string"}}
LEFT = "select o.id, c.name from db.o o left join db.c c on o.cust = c.cid"
FULL = "select o.id, c.name from db.o o full join db.c c on o.cust = c.cid"
NESTED = (
    "select o.id, c.name, r.label from db.o o left join db.c c on o.cust = c.cid "
    "left join db.r r on c.cid = r.cid and r.label <> c.name"
)
# Window views (`classes.windows`): keep-the-latest over a derived table, and a window over a join.
WINDOW_SCHEMA = {**SCHEMA, "db.h": {"id": "int", "key": "int", "eff": "timestamp", "val": "string"}}
LATEST = (
    "select key, val from (select key, val, row_number() over (partition by key order by eff desc, id) as rn "
    "from db.h) s where rn = 1"
)
RANKED = (
    "select o.id, c.name, rank() over (partition by c.name order by o.amt) as r, "
    "sum(o.amt) over (partition by c.name, o.cust order by o.id rows between 1 preceding and current row) as s "
    "from db.o o join db.c c on o.cust = c.cid"
)
# Semi-join views (`classes.semijoins`): an EXISTS and a NOT IN sharing the key o.cust, and a
# three-valued NOT IN keyed by its value.
SEMI = (
    "select o.id, o.amt from db.o o where o.amt > 1 and exists (select 1 from db.c c where c.cid = o.cust "
    "and c.name <> 'x') and o.cust not in (select r.cid from db.r r where r.cid = o.cust and r.label is not null)"
)
NOT_IN = "select id, note from db.o where cust not in (select cid from db.c where name like 'a%')"
# Set operations (`classes.setops`): a UNION ALL of a join and an outer join, and a nested mix.
SETOPS = (
    "select o.id, c.name from db.o o join db.c c on o.cust = c.cid union all "
    "select r.rid, c.name from db.r r left join db.c c on r.cid = c.cid"
)
# An aggregate over a UNION ALL subquery (`analyze.union_leaf`): db.c in both branches, one a join.
UNION_AGG = (
    "select feed, cust, count(*) as n, sum(amt) as s, max(amt) as hi from (select 'o' as feed, o.cust, o.amt "
    "from db.o o join db.c c on o.cust = c.cid union all select 'c', cid, 1.0 from db.c) u group by feed, cust"
)
# A join over a UNION ALL subquery (`analyze.union_join`): distributed over its branches, the
# branch's NULL join key cast to the other branch's type.
UNION_JOIN = (
    "select u.cust, u.amt, c.name from (select cust, amt from db.o union all select null, 2.0 from db.r "
    "where label is not null) u left join db.c c on u.cust = c.cid"
)
# A SELECT with no join over a UNION ALL (`analyze.union_join`): distributed as a join is, the NULL
# the WHERE and the expression read cast to the other branch's type.
UNION_SELECT = (
    "select u.cust, u.amt * 2 as a2 from (select cust, amt from db.o union all select cid, null from db.c "
    "where name is not null) u where u.amt > 1"
)
# A window over a join with a UNION ALL (`analyze.union_leaf_join`): the join over each branch as one
# leaf, a rolling MIN over the union's rows by the joined dimension's key.
UNION_JOIN_WINDOW = (
    "select u.cust, u.amt, c.name, min(u.amt) over (partition by c.cid order by u.amt rows between 2 preceding "
    "and current row) as lo from (select cust, amt from db.o union all select cid, 2.0 from db.r) u "
    "join db.c c on u.cust = c.cid"
)
# The UNION ALL on the null-supplied side of a LEFT JOIN (`analyze.union_padded`): the inner join over
# each branch and the padded rows of c that match no branch's row.
UNION_NULL_SIDE = (
    "select c.name, u.amt from db.c c left join (select cust, amt from db.o where amt > 0 union all "
    "select cid, 1.0 from db.r) u on u.cust = c.cid"
)
NESTED_SETOPS = (
    "select cust from db.o union select cid from db.c except all select distinct cid from db.r "
    "union all select id from db.o intersect select rid from db.r"
)
# A UNION ALL with a DOUBLE column: its storage tells -0.0 from 0.0 (`classes.setops._textual`).
SIGNED = "select id, amt from db.o union all select cid, cid * 0.5 as half from db.c"
