SELECT
  `id`,
  `amt`,
  `__ivm_p_0`,
  SUM(`__ivm_d`) AS `__ivm_d`
FROM (
  SELECT
    `id`,
    `amt`,
    `__ivm_p_0`,
    COUNT(*) AS `__ivm_d`
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
    LEFT SEMI JOIN `__ivm_keys_x` AS __ivm_t
      ON `o`.`cust` IS NOT DISTINCT FROM `__ivm_t`.`__ivm_p_0`
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
  UNION ALL
  SELECT
    `id`,
    `amt`,
    `__ivm_p_0`,
    -`__ivm_count` AS __ivm_d
  FROM `db`.`v__ivm` AS __ivm_s
  LEFT SEMI JOIN `__ivm_keys_x` AS __ivm_t
    ON `__ivm_s`.`__ivm_p_0` IS NOT DISTINCT FROM `__ivm_t`.`__ivm_p_0`
) AS `__ivm_v`
GROUP BY
  `id`,
  `amt`,
  `__ivm_p_0`
HAVING
  SUM(`__ivm_d`) <> 0
