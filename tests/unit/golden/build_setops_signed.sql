SELECT
  `id`,
  ANY_VALUE(`amt`) AS `amt`,
  SUM(`__ivm_c0`) AS `__ivm_c0`,
  SUM(`__ivm_c1`) AS `__ivm_c1`
FROM (
  SELECT
    `id`,
    `amt`,
    1 AS `__ivm_c0`,
    0 AS `__ivm_c1`
  FROM (
    SELECT
      `o`.`id` AS `id`,
      `o`.`amt` AS `amt`
    FROM (
      SELECT
        `id`,
        `amt`
      FROM `db`.`o` VERSION AS OF 4
    ) AS `o`
  ) AS `__ivm_b`
  UNION ALL
  SELECT
    `id`,
    `amt`,
    0 AS `__ivm_c0`,
    1 AS `__ivm_c1`
  FROM (
    SELECT
      `c`.`cid` AS `id`,
      `c`.`cid` * 0.5 AS `amt`
    FROM (
      SELECT
        `cid`
      FROM `db`.`c` VERSION AS OF 7
    ) AS `c`
  ) AS `__ivm_b`
) AS `__ivm_u`
GROUP BY
  `id`,
  CAST(`amt` AS STRING)
