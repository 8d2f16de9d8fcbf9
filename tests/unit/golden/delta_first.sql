SELECT
  `key`,
  `val`,
  `rn`,
  `__ivm_p_0`,
  `__ivm_o_0`,
  `__ivm_o_1`,
  SUM(`__ivm_d`) AS `__ivm_d`
FROM (
  SELECT
    `key`,
    `val`,
    `rn`,
    `__ivm_p_0`,
    `__ivm_o_0`,
    `__ivm_o_1`,
    COUNT(*) AS `__ivm_d`
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
      LEFT SEMI JOIN `__ivm_parts_x` AS __ivm_t
        ON `h`.`key` IS NOT DISTINCT FROM `__ivm_t`.`__ivm_p_0` AND `__ivm_t`.`__ivm_r` = 1
    ) AS `s`
    WHERE
      `s`.`rn` = 1
    UNION ALL
    SELECT
      `key`,
      `val`,
      `rn`,
      `__ivm_p_0`,
      `__ivm_o_0`,
      `__ivm_o_1`
    FROM (
      SELECT
        `key`,
        `val`,
        `rn`,
        `__ivm_p_0`,
        `__ivm_o_0`,
        `__ivm_o_1`,
        ROW_NUMBER() OVER (PARTITION BY `__ivm_p_0` ORDER BY `__ivm_o_0` DESC, `__ivm_o_1`) AS `__ivm_first`
      FROM (
        SELECT
          `__ivm_s`.`key`,
          `__ivm_s`.`val`,
          `__ivm_s`.`rn`,
          `__ivm_s`.`__ivm_p_0`,
          `__ivm_s`.`__ivm_o_0`,
          `__ivm_s`.`__ivm_o_1`
        FROM `db`.`v__ivm` AS __ivm_s
        LEFT SEMI JOIN `__ivm_parts_x` AS __ivm_t
          ON `__ivm_s`.`__ivm_p_0` IS NOT DISTINCT FROM `__ivm_t`.`__ivm_p_0`
          AND `__ivm_t`.`__ivm_r` = 0
        UNION ALL
        SELECT
          `__ivm_c`.`key`,
          `__ivm_c`.`val`,
          `__ivm_c`.`rn`,
          `__ivm_c`.`__ivm_p_0`,
          `__ivm_c`.`__ivm_o_0`,
          `__ivm_c`.`__ivm_o_1`
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
        LEFT SEMI JOIN `__ivm_parts_x` AS __ivm_t
          ON `__ivm_c`.`__ivm_p_0` IS NOT DISTINCT FROM `__ivm_t`.`__ivm_p_0`
          AND `__ivm_t`.`__ivm_r` = 0
        WHERE
          `__ivm_c`.`__ivm_d` > 0
      ) AS `__ivm_k`
    ) AS `__ivm_f`
    WHERE
      `__ivm_first` = 1
  ) AS `__ivm_v`
  GROUP BY
    `key`,
    `val`,
    `rn`,
    `__ivm_p_0`,
    `__ivm_o_0`,
    `__ivm_o_1`
  UNION ALL
  SELECT
    `key`,
    `val`,
    `rn`,
    `__ivm_p_0`,
    `__ivm_o_0`,
    `__ivm_o_1`,
    -`__ivm_count` AS __ivm_d
  FROM `db`.`v__ivm` AS __ivm_s
  LEFT SEMI JOIN `__ivm_parts_x` AS __ivm_t
    ON `__ivm_s`.`__ivm_p_0` IS NOT DISTINCT FROM `__ivm_t`.`__ivm_p_0`
) AS `__ivm_v`
GROUP BY
  `key`,
  `val`,
  `rn`,
  `__ivm_p_0`,
  `__ivm_o_0`,
  `__ivm_o_1`
HAVING
  SUM(`__ivm_d`) <> 0
