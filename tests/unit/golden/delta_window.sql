SELECT
  `id`,
  `name`,
  `r`,
  `s`,
  `__ivm_p_0`,
  SUM(`__ivm_d`) AS `__ivm_d`
FROM (
  SELECT
    `id`,
    `name`,
    `r`,
    `s`,
    `__ivm_p_0`,
    COUNT(*) AS `__ivm_d`
  FROM (
    SELECT
      `o`.`id` AS `id`,
      `c`.`name` AS `name`,
      RANK() OVER (PARTITION BY `c`.`name` ORDER BY `o`.`amt`) AS `r`,
      SUM(`o`.`amt`) OVER (
        PARTITION BY `c`.`name`, `o`.`cust`
        ORDER BY `o`.`id`
        rows BETWEEN 1 preceding AND CURRENT ROW
      ) AS `s`,
      `c`.`name` AS `__ivm_p_0`
    FROM (
      SELECT
        `id`,
        `cust`,
        `amt`
      FROM `db`.`o` VERSION AS OF 4
    ) AS `o`
    JOIN (
      SELECT
        `cid`,
        `name`
      FROM `db`.`c` VERSION AS OF 7
    ) AS `c`
      ON `o`.`cust` = `c`.`cid`
    LEFT SEMI JOIN `__ivm_parts_x` AS __ivm_t
      ON `c`.`name` IS NOT DISTINCT FROM `__ivm_t`.`__ivm_p_0`
  ) AS `__ivm_v`
  GROUP BY
    `id`,
    `name`,
    `r`,
    `s`,
    `__ivm_p_0`
  UNION ALL
  SELECT
    `id`,
    `name`,
    `r`,
    `s`,
    `__ivm_p_0`,
    -`__ivm_count` AS __ivm_d
  FROM `db`.`v__ivm` AS __ivm_s
  LEFT SEMI JOIN `__ivm_parts_x` AS __ivm_t
    ON `__ivm_s`.`__ivm_p_0` IS NOT DISTINCT FROM `__ivm_t`.`__ivm_p_0`
) AS `__ivm_v`
GROUP BY
  `id`,
  `name`,
  `r`,
  `s`,
  `__ivm_p_0`
HAVING
  SUM(`__ivm_d`) <> 0
