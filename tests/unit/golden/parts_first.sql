SELECT
  `__ivm_c`.`__ivm_p_0` AS `__ivm_p_0`,
  MAX(
    IF(
      `__ivm_c`.`__ivm_d` < 0
      AND (
        `__ivm_s`.`__ivm_count` IS NULL
        OR (
          `__ivm_c`.`__ivm_o_0` IS NOT DISTINCT FROM `__ivm_s`.`__ivm_o_0`
          AND `__ivm_c`.`__ivm_o_1` IS NOT DISTINCT FROM `__ivm_s`.`__ivm_o_1`
        )
      ),
      1,
      0
    )
  ) AS `__ivm_r`
FROM (
  SELECT
    `key`,
    `val`,
    `rn`,
    `__ivm_p_0`,
    `__ivm_o_0`,
    `__ivm_o_1`,
    `__ivm_d`
  FROM (
    SELECT
      `key`,
      `val`,
      `rn`,
      `__ivm_p_0`,
      `__ivm_o_0`,
      `__ivm_o_1`,
      `__ivm_rid_0`,
      `__ivm_c_0_0`,
      `__ivm_c_0_1`,
      `__ivm_c_0_2`,
      `__ivm_c_0_3`,
      SUM(`__ivm_d`) AS `__ivm_d`
    FROM (
      SELECT
        `h`.`key` AS `key`,
        `h`.`val` AS `val`,
        1 AS `rn`,
        `h`.`key` AS `__ivm_p_0`,
        `h`.`eff` AS `__ivm_o_0`,
        `h`.`id` AS `__ivm_o_1`,
        `h`.`__ivm_rid` AS `__ivm_rid_0`,
        `h`.`id` AS `__ivm_c_0_0`,
        `h`.`key` AS `__ivm_c_0_1`,
        `h`.`eff` AS `__ivm_c_0_2`,
        `h`.`val` AS `__ivm_c_0_3`,
        `h`.`__ivm_d` AS `__ivm_d`
      FROM `__ivm_chg_0` AS `h`
    ) AS `__ivm_c`
    GROUP BY
      `key`,
      `val`,
      `rn`,
      `__ivm_p_0`,
      `__ivm_o_0`,
      `__ivm_o_1`,
      `__ivm_rid_0`,
      `__ivm_c_0_0`,
      `__ivm_c_0_1`,
      `__ivm_c_0_2`,
      `__ivm_c_0_3`
    HAVING
      SUM(`__ivm_d`) <> 0
  ) AS `__ivm_n`
) AS `__ivm_c`
LEFT JOIN `db`.`v__ivm` AS __ivm_s
  ON `__ivm_c`.`__ivm_p_0` IS NOT DISTINCT FROM `__ivm_s`.`__ivm_p_0`
GROUP BY
  `__ivm_c`.`__ivm_p_0`
