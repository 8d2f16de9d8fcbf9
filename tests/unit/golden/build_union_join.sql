SELECT
  `cust`,
  `amt`,
  `name`,
  SUM(`__ivm_c0`) AS `__ivm_c0`,
  SUM(`__ivm_c1`) AS `__ivm_c1`
FROM (
  SELECT
    `cust`,
    `amt`,
    `name`,
    1 AS `__ivm_c0`,
    0 AS `__ivm_c1`
  FROM (
    SELECT
      `o`.`cust` AS `cust`,
      `o`.`amt` AS `amt`,
      `c`.`name` AS `name`
    FROM (
      SELECT
        `cust`,
        `amt`
      FROM `db`.`o` VERSION AS OF 4
    ) AS `o`
    LEFT JOIN (
      SELECT
        `cid`,
        `name`
      FROM `db`.`c` VERSION AS OF 7
    ) AS `c`
      ON `o`.`cust` = `c`.`cid`
  ) AS `__ivm_b`
  UNION ALL
  SELECT
    `cust`,
    `amt`,
    `name`,
    0 AS `__ivm_c0`,
    1 AS `__ivm_c1`
  FROM (
    SELECT
      CAST(NULL AS INT) AS `cust`,
      2.0 AS `amt`,
      `c`.`name` AS `name`
    FROM (
      SELECT
        `label`
      FROM `db`.`r` VERSION AS OF 6
    ) AS `r`
    LEFT JOIN (
      SELECT
        `cid`,
        `name`
      FROM `db`.`c` VERSION AS OF 7
    ) AS `c`
      ON CAST(NULL AS INT) = `c`.`cid`
    WHERE
      NOT `r`.`label` IS NULL
  ) AS `__ivm_b`
) AS `__ivm_u`
GROUP BY
  `cust`,
  `amt`,
  `name`
