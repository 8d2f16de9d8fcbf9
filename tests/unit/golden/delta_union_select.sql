SELECT
  `cust`,
  ANY_VALUE(`a2`) AS `a2`,
  SUM(`__ivm_c0`) AS `__ivm_c0`,
  SUM(`__ivm_c1`) AS `__ivm_c1`
FROM (
  SELECT
    `cust`,
    `a2`,
    `__ivm_d` AS `__ivm_c0`,
    0 AS `__ivm_c1`
  FROM (
    SELECT
      CAST(`o`.`cust` AS INT) AS `cust`,
      CAST(`o`.`amt` * 2 AS DOUBLE) AS `a2`,
      `o`.`__ivm_d` AS `__ivm_d`
    FROM `__ivm_chg_0` AS `o`
    WHERE
      `o`.`amt` > 1
  ) AS `__ivm_b`
  UNION ALL
  SELECT
    `cust`,
    `a2`,
    0 AS `__ivm_c0`,
    `__ivm_d` AS `__ivm_c1`
  FROM (
    SELECT
      CAST(`c`.`cid` AS INT) AS `cust`,
      CAST(CAST(NULL AS DOUBLE) * 2 AS DOUBLE) AS `a2`,
      `c`.`__ivm_d` AS `__ivm_d`
    FROM `__ivm_chg_1` AS `c`
    WHERE
      CAST(NULL AS DOUBLE) > 1 AND NOT `c`.`name` IS NULL
  ) AS `__ivm_b`
) AS `__ivm_u`
GROUP BY
  `cust`,
  CAST(`a2` AS STRING)
HAVING
  SUM(`__ivm_c0`) <> 0 OR SUM(`__ivm_c1`) <> 0
