SELECT
  `o`.`cust` AS `__ivm_g_0`,
  `c`.`name` AS `__ivm_g_1`,
  TRUE AS `__ivm_r`,
  MAX(`o`.`amt`) AS `__ivm_r_3`,
  COUNT(DISTINCT `o`.`note`) AS `__ivm_r_4`
FROM (
  SELECT
    `id`,
    `cust`,
    `amt`,
    `note`
  FROM `db`.`o` VERSION AS OF 4
) AS `o`
JOIN (
  SELECT
    `cid`,
    `name`
  FROM `db`.`c` VERSION AS OF 7
) AS `c`
  ON `c`.`cid` = `o`.`cust`
WHERE
  `o`.`id` > 0
  AND EXISTS(
    SELECT
      1
    FROM `__ivm_lost_x` AS f
    WHERE
      `f`.`__ivm_g_0` IS NOT DISTINCT FROM `o`.`cust`
      AND `f`.`__ivm_g_1` IS NOT DISTINCT FROM `c`.`name`
  )
GROUP BY
  `o`.`cust`,
  `c`.`name`
