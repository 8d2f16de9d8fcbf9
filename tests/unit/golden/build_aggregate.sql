SELECT
  `o`.`cust` AS `__ivm_g_0`,
  `c`.`name` AS `__ivm_g_1`,
  COUNT(*) AS `__ivm_count`,
  COUNT(`o`.`amt`) AS `__ivm_nn_1`,
  SUM(`o`.`amt`) AS `__ivm_a_1`,
  COUNT(`o`.`amt`) AS `__ivm_nn_2`,
  SUM(`o`.`amt`) AS `__ivm_a_2`,
  MAX(`o`.`amt`) AS `__ivm_a_3`,
  COUNT(DISTINCT `o`.`note`) AS `__ivm_a_4`
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
GROUP BY
  `o`.`cust`,
  `c`.`name`
