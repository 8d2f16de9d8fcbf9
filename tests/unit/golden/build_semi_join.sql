SELECT
  `id`,
  `amt`,
  `__ivm_p_0`,
  COUNT(*) AS `__ivm_count`
FROM (
  SELECT
    `o`.`id` AS `id`,
    `o`.`amt` AS `amt`,
    `o`.`cust` AS `__ivm_p_0`
  FROM (
    SELECT
      `id`,
      `cust`,
      `amt`
    FROM `db`.`o` VERSION AS OF 4
  ) AS `o`
  WHERE
    `o`.`amt` > 1
    AND EXISTS(
      SELECT
        1 AS `1`
      FROM (
        SELECT
          `cid`,
          `name`
        FROM `db`.`c` VERSION AS OF 7
      ) AS `c`
      WHERE
        `c`.`cid` = `o`.`cust` AND `c`.`name` <> 'x'
    )
    AND NOT `o`.`cust` IN (
      SELECT
        `r`.`cid` AS `cid`
      FROM (
        SELECT
          `cid`,
          `label`
        FROM `db`.`r` VERSION AS OF 6
      ) AS `r`
      WHERE
        `r`.`cid` = `o`.`cust` AND NOT `r`.`label` IS NULL
    )
) AS `__ivm_v`
GROUP BY
  `id`,
  `amt`,
  `__ivm_p_0`
