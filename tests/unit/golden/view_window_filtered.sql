SELECT
  `s`.`key` AS `key`,
  `s`.`val` AS `val`
FROM (
  SELECT
    `key`,
    `val`,
    `rn`
  FROM `db`.`v__ivm`
  LATERAL VIEW
  EXPLODE(SEQUENCE(1, `__ivm_count`)) __ivm_e AS `__ivm_n`
) AS `s`
WHERE
  `s`.`rn` = 1
