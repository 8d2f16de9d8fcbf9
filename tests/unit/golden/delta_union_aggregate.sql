SELECT
  `__ivm_g_0`,
  `__ivm_g_1`,
  COALESCE(MAX(IF(NOT `__ivm_s_0` = 0, `__ivm_count`, NULL)), 0) AS `__ivm_count`,
  COALESCE(MAX(IF(NOT `__ivm_s_0` = 0, `__ivm_nn_1`, NULL)), 0) AS `__ivm_nn_1`,
  MAX(IF(NOT `__ivm_s_0` = 0, `__ivm_a_1`, NULL)) AS `__ivm_a_1`,
  MAX(IF(`__ivm_s_0` = 0 AND `__ivm_count` > 0, `__ivm_v_0`, NULL)) AS `__ivm_a_2`,
  MAX_BY(`__ivm_count`, IF(`__ivm_s_0` = 0 AND `__ivm_count` > 0, `__ivm_v_0`, NULL)) AS `__ivm_m_2`,
  MAX(IF(`__ivm_s_0` = 0 AND `__ivm_count` < 0, `__ivm_v_0`, NULL)) AS `__ivm_del_2`,
  -MAX_BY(`__ivm_count`, IF(`__ivm_s_0` = 0 AND `__ivm_count` < 0, `__ivm_v_0`, NULL)) AS `__ivm_delm_2`
FROM (
  SELECT
    `__ivm_g_0`,
    `__ivm_g_1`,
    COALESCE(SUM(`__ivm_d`), 0) AS `__ivm_count`,
    COALESCE(SUM(IF(`__ivm_x_1` IS NULL, 0, `__ivm_d`)), 0) AS `__ivm_nn_1`,
    CASE
      WHEN SUM(IF(`__ivm_d` > 0, `__ivm_x_1`, NULL)) IS NULL
      THEN -SUM(IF(`__ivm_d` < 0, `__ivm_x_1`, NULL))
      WHEN SUM(IF(`__ivm_d` < 0, `__ivm_x_1`, NULL)) IS NULL
      THEN SUM(IF(`__ivm_d` > 0, `__ivm_x_1`, NULL))
      ELSE SUM(IF(`__ivm_d` > 0, `__ivm_x_1`, NULL)) - SUM(IF(`__ivm_d` < 0, `__ivm_x_1`, NULL))
    END AS `__ivm_a_1`,
    `__ivm_x_2` AS `__ivm_v_0`,
    GROUPING(`__ivm_x_2`) AS `__ivm_s_0`
  FROM (
    SELECT
      `u`.`feed` AS `__ivm_g_0`,
      `u`.`cust` AS `__ivm_g_1`,
      `u`.`amt` AS `__ivm_x_1`,
      `u`.`amt` AS `__ivm_x_2`,
      `u`.`__ivm_d` AS `__ivm_d`
    FROM (
      SELECT
        `__ivm_u0` AS `feed`,
        `__ivm_u1` AS `cust`,
        `__ivm_u2` AS `amt`,
        `__ivm_d`
      FROM (
        SELECT
          'o' AS `__ivm_u0`,
          `o`.`cust` AS `__ivm_u1`,
          `o`.`amt` AS `__ivm_u2`,
          `o`.`__ivm_d` AS `__ivm_d`
        FROM (
          SELECT
            `cust`,
            `amt`,
            `__ivm_rid`,
            `__ivm_s` AS `__ivm_d`
          FROM `__ivm_chg_0`
          LATERAL VIEW
          EXPLODE(ARRAY_REPEAT(IF(`__ivm_d` > 0, 1, -1), CAST(ABS(`__ivm_d`) AS INT))) __ivm_e AS `__ivm_s`
        ) AS `o`
        JOIN (
          SELECT
            `cid`
          FROM `db`.`c` VERSION AS OF 5
        ) AS `c`
          ON `o`.`cust` = `c`.`cid`
        UNION ALL
        SELECT
          'o' AS `__ivm_u0`,
          `o`.`cust` AS `__ivm_u1`,
          `o`.`amt` AS `__ivm_u2`,
          `c`.`__ivm_d` AS `__ivm_d`
        FROM (
          SELECT
            `cust`,
            `amt`
          FROM `db`.`o` VERSION AS OF 4
        ) AS `o`
        JOIN (
          SELECT
            `cid`,
            `__ivm_rid`,
            `__ivm_s` AS `__ivm_d`
          FROM `__ivm_chg_1`
          LATERAL VIEW
          EXPLODE(ARRAY_REPEAT(IF(`__ivm_d` > 0, 1, -1), CAST(ABS(`__ivm_d`) AS INT))) __ivm_e AS `__ivm_s`
        ) AS `c`
          ON `o`.`cust` = `c`.`cid`
        UNION ALL
        SELECT
          'c' AS `__ivm_u0`,
          `c`.`cid` AS `__ivm_u1`,
          1.0 AS `__ivm_u2`,
          `c`.`__ivm_d` AS `__ivm_d`
        FROM (
          SELECT
            `cid`,
            `__ivm_rid`,
            `__ivm_s` AS `__ivm_d`
          FROM `__ivm_chg_2`
          LATERAL VIEW
          EXPLODE(ARRAY_REPEAT(IF(`__ivm_d` > 0, 1, -1), CAST(ABS(`__ivm_d`) AS INT))) __ivm_e AS `__ivm_s`
        ) AS `c`
        UNION ALL
        SELECT
          `feed`,
          `cust`,
          `amt`,
          0 AS `__ivm_d`
        FROM (
          SELECT
            `__ivm_u0` AS `feed`,
            `__ivm_u1` AS `cust`,
            `__ivm_u2` AS `amt`
          FROM (
            SELECT
              'o' AS `__ivm_u0`,
              `o`.`cust` AS `__ivm_u1`,
              `o`.`amt` AS `__ivm_u2`
            FROM (
              SELECT
                `cust`,
                `amt`
              FROM `db`.`o` VERSION AS OF 4
            ) AS `o`
            JOIN (
              SELECT
                `cid`
              FROM `db`.`c` VERSION AS OF 7
            ) AS `c`
              ON `o`.`cust` = `c`.`cid`
            UNION ALL
            SELECT
              'c' AS `__ivm_u0`,
              `c`.`cid` AS `__ivm_u1`,
              1.0 AS `__ivm_u2`
            FROM (
              SELECT
                `cid`
              FROM `db`.`c` VERSION AS OF 7
            ) AS `c`
          ) AS `__ivm_lu`
        ) AS `u`
        WHERE
          FALSE
      ) AS `__ivm_lu`
    ) AS `u`
  ) AS `__ivm_t`
  GROUP BY
    GROUPING SETS (
      (`__ivm_g_0`, `__ivm_g_1`),
      (`__ivm_g_0`, `__ivm_g_1`, `__ivm_x_2`)
    )
) AS `__ivm_l`
GROUP BY
  `__ivm_g_0`,
  `__ivm_g_1`
