SELECT
  `o`.`cust` AS `__ivm_g_0`,
  `c`.`name` AS `__ivm_g_1`,
  TRUE AS `__ivm_r`,
  COUNT(*) AS `__ivm_r_count`,
  COUNT(`o`.`amt`) AS `__ivm_r_nn_1`,
  SUM(`o`.`amt`) AS `__ivm_r_a_1`,
  COUNT(`o`.`amt`) AS `__ivm_r_nn_2`,
  SUM(`o`.`amt`) AS `__ivm_r_a_2`,
  MAX(`o`.`amt`) AS `__ivm_r_a_3`,
  COUNT(DISTINCT `o`.`note`) AS `__ivm_r_a_4`
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
  ON `o`.`cust` = `c`.`cid`
WHERE
  `o`.`id` > 0
  AND EXISTS(
    SELECT
      1
    FROM `__ivm_lost_x` AS `__ivm_f`
    WHERE
      `__ivm_f`.`__ivm_g_0` IS NOT DISTINCT FROM `o`.`cust`
      AND `__ivm_f`.`__ivm_g_1` IS NOT DISTINCT FROM `c`.`name`
  )
GROUP BY
  `o`.`cust`,
  `c`.`name`
