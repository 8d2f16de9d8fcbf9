SELECT
  `id`,
  `name`,
  SUM(`__ivm_c0`) AS `__ivm_c0`,
  SUM(`__ivm_c1`) AS `__ivm_c1`
FROM (
  SELECT
    `id`,
    `name`,
    1 AS `__ivm_c0`,
    0 AS `__ivm_c1`
  FROM (
    SELECT
      `o`.`id` AS `id`,
      `c`.`name` AS `name`
    FROM (
      SELECT
        `id`,
        `cust`
      FROM `db`.`o` VERSION AS OF 4
    ) AS `o`
    JOIN (
      SELECT
        `cid`,
        `name`
      FROM `db`.`c` VERSION AS OF 7
    ) AS `c`
      ON `o`.`cust` = `c`.`cid`
  ) AS `__ivm_b`
  UNION ALL
  SELECT
    `id`,
    `name`,
    0 AS `__ivm_c0`,
    1 AS `__ivm_c1`
  FROM (
    SELECT
      `r`.`rid` AS `id`,
      `c`.`name` AS `name`
    FROM (
      SELECT
        `rid`,
        `cid`
      FROM `db`.`r` VERSION AS OF 6
    ) AS `r`
    LEFT JOIN (
      SELECT
        `cid`,
        `name`
      FROM `db`.`c` VERSION AS OF 7
    ) AS `c`
      ON `r`.`cid` = `c`.`cid`
  ) AS `__ivm_b`
) AS `__ivm_u`
GROUP BY
  `id`,
  `name`
