SELECT DISTINCT
  *
FROM (
  SELECT DISTINCT
    `__ivm_p_0` AS `__ivm_p_0`,
    FALSE AS `__ivm_all`
  FROM (
    SELECT
      `__ivm_p_0`,
      `__ivm_r_0`,
      `__ivm_c_0_0`,
      `__ivm_c_0_1`,
      `__ivm_c_0_2`
    FROM (
      SELECT
        `o`.`cust` AS `__ivm_p_0`,
        `o`.`__ivm_rid` AS `__ivm_r_0`,
        `o`.`id` AS `__ivm_c_0_0`,
        `o`.`cust` AS `__ivm_c_0_1`,
        `o`.`note` AS `__ivm_c_0_2`,
        `o`.`__ivm_d` AS `__ivm_d`
      FROM (
        SELECT
          `id`,
          `cust`,
          `note`,
          `__ivm_rid`,
          SUM(`__ivm_sign`) AS `__ivm_d`
        FROM (
          SELECT
            `id`,
            `cust`,
            `note`,
            XXHASH64(`id`, `cust`, `note`, `id` IS NULL, `cust` IS NULL, `note` IS NULL) AS `__ivm_rid`,
            IF(`_change_type` IN ('insert', 'update_postimage'), 1, -1) AS `__ivm_sign`
          FROM TABLE_CHANGES('`db`.`o`', 4, 4)
        ) AS `__ivm_feed`
        GROUP BY
          `__ivm_rid`,
          `id`,
          `cust`,
          `note`
        HAVING
          SUM(`__ivm_sign`) <> 0
      ) AS `o`
    ) AS `__ivm_c`
    GROUP BY
      `__ivm_p_0`,
      `__ivm_r_0`,
      `__ivm_c_0_0`,
      `__ivm_c_0_1`,
      `__ivm_c_0_2`
    HAVING
      SUM(`__ivm_d`) <> 0
  ) AS `__ivm_n`
  UNION ALL
  SELECT
    *
  FROM (
    SELECT DISTINCT
      `__ivm_k_0` AS `__ivm_p_0`,
      `__ivm_k_0` IS NULL AS `__ivm_all`
    FROM (
      SELECT
        `__ivm_k_0`,
        `__ivm_r_0`,
        `__ivm_c_0_0`,
        `__ivm_c_0_1`
      FROM (
        SELECT
          `c`.`cid` AS `__ivm_k_0`,
          `c`.`__ivm_rid` AS `__ivm_r_0`,
          `c`.`cid` AS `__ivm_c_0_0`,
          `c`.`name` AS `__ivm_c_0_1`,
          `c`.`__ivm_d` AS `__ivm_d`
        FROM `__ivm_chg_1` AS `c`
        WHERE
          `c`.`name` LIKE 'a%'
      ) AS `__ivm_c`
      GROUP BY
        `__ivm_k_0`,
        `__ivm_r_0`,
        `__ivm_c_0_0`,
        `__ivm_c_0_1`
      HAVING
        SUM(`__ivm_d`) <> 0
    ) AS `__ivm_n`
    UNION ALL
    SELECT DISTINCT
      NULL AS `__ivm_p_0`,
      FALSE AS `__ivm_all`
    FROM (
      SELECT
        `__ivm_k_0`,
        `__ivm_r_0`,
        `__ivm_c_0_0`,
        `__ivm_c_0_1`
      FROM (
        SELECT
          `c`.`cid` AS `__ivm_k_0`,
          `c`.`__ivm_rid` AS `__ivm_r_0`,
          `c`.`cid` AS `__ivm_c_0_0`,
          `c`.`name` AS `__ivm_c_0_1`,
          `c`.`__ivm_d` AS `__ivm_d`
        FROM `__ivm_chg_1` AS `c`
        WHERE
          `c`.`name` LIKE 'a%'
      ) AS `__ivm_c`
      GROUP BY
        `__ivm_k_0`,
        `__ivm_r_0`,
        `__ivm_c_0_0`,
        `__ivm_c_0_1`
      HAVING
        SUM(`__ivm_d`) <> 0
    ) AS `__ivm_n`
  ) AS `__ivm_u`
) AS `__ivm_k`
