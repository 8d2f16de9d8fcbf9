SELECT 'missing from the view' AS `__ivm_diff`, * FROM (SELECT * FROM (
select o.id, c.name from db.o VERSION AS OF 3 o join db.c VERSION AS OF 5 c on o.cust = c.cid where o.amt > 1
) AS `__ivm_m` EXCEPT ALL SELECT * FROM `db`.`v__ivm`) AS m UNION ALL SELECT 'extra in the view' AS `__ivm_diff`, * FROM (SELECT * FROM `db`.`v__ivm` EXCEPT ALL SELECT * FROM (
select o.id, c.name from db.o VERSION AS OF 3 o join db.c VERSION AS OF 5 c on o.cust = c.cid where o.amt > 1
) AS `__ivm_m`) AS x
