SELECT
  `key`,
  `val`,
  `rn`,
  `__ivm_p_0`,
  `__ivm_o_0`,
  `__ivm_o_1`,
  COUNT(*) AS `__ivm_count`
FROM (
  SELECT
    `key`,
    `val`,
    `rn`,
    `__ivm_p_0`,
    `__ivm_o_0`,
    `__ivm_o_1`
  FROM (
    SELECT
      `h`.`key` AS `key`,
      `h`.`val` AS `val`,
      ROW_NUMBER() OVER (PARTITION BY `h`.`key` ORDER BY `h`.`eff` DESC, `h`.`id`) AS `rn`,
      `h`.`key` AS `__ivm_p_0`,
      `h`.`eff` AS `__ivm_o_0`,
      `h`.`id` AS `__ivm_o_1`
    FROM (
      SELECT
        `id`,
        `key`,
        `eff`,
        `val`
      FROM `db`.`h` VERSION AS OF 4
    ) AS `h`
  ) AS `s`
  WHERE
    `s`.`rn` = 1
) AS `__ivm_v`
GROUP BY
  `key`,
  `val`,
  `rn`,
  `__ivm_p_0`,
  `__ivm_o_0`,
  `__ivm_o_1`
