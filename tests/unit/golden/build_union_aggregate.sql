SELECT
  `__ivm_g_0`,
  `__ivm_g_1`,
  COALESCE(MAX(IF(NOT `__ivm_s_0` = 0, `__ivm_count`, NULL)), 0) AS `__ivm_count`,
  COALESCE(MAX(IF(NOT `__ivm_s_0` = 0, `__ivm_nn_1`, NULL)), 0) AS `__ivm_nn_1`,
  MAX(IF(NOT `__ivm_s_0` = 0, `__ivm_a_1`, NULL)) AS `__ivm_a_1`,
  MAX(IF(NOT `__ivm_s_0` = 0, `__ivm_a_2`, NULL)) AS `__ivm_a_2`,
  MAX_BY(`__ivm_count`, IF(`__ivm_s_0` = 0, `__ivm_v_0`, NULL)) AS `__ivm_m_2`
FROM (
  SELECT
    `u`.`feed` AS `__ivm_g_0`,
    `u`.`cust` AS `__ivm_g_1`,
    COUNT(*) AS `__ivm_count`,
    COUNT(`u`.`amt`) AS `__ivm_nn_1`,
    SUM(`u`.`amt`) AS `__ivm_a_1`,
    MAX(`u`.`amt`) AS `__ivm_a_2`,
    `u`.`amt` AS `__ivm_v_0`,
    GROUPING(`u`.`amt`) AS `__ivm_s_0`
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
  GROUP BY
    GROUPING SETS (
      (`u`.`feed`, `u`.`cust`),
      (`u`.`feed`, `u`.`cust`, `u`.`amt`)
    )
) AS `__ivm_l`
GROUP BY
  `__ivm_g_0`,
  `__ivm_g_1`
