SELECT
  `__ivm_p0_0`.`cust` AS `__ivm_t0_0_0`,
  `__ivm_p0_1`.`cust` AS `__ivm_t0_1_0`,
  `__ivm_p0_2`.`cust` AS `__ivm_t0_2_0`
FROM (
  SELECT
    `o`.`cust` AS `cust`,
    `o`.`amt` AS `amt`
  FROM `db`.`o` AS `o`
  UNION ALL
  SELECT
    `r`.`cid` AS `cust`,
    2.0 AS `amt`
  FROM `db`.`r` AS `r`
) AS `__ivm_p0_0`
CROSS JOIN (
  SELECT
    `o`.`cust` AS `cust`,
    `o`.`amt` AS `amt`
  FROM `db`.`o` AS `o`
) AS `__ivm_p0_1`
CROSS JOIN (
  SELECT
    `r`.`cid` AS `cust`,
    2.0 AS `amt`
  FROM `db`.`r` AS `r`
) AS `__ivm_p0_2`
