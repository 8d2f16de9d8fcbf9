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
  COUNT_IF(`__ivm_d` < 0 AND NOT `__ivm_x_1` IS NULL AND NOT `__ivm_x_1` - `__ivm_x_1` = 0) AS `__ivm_nf_1`,
  COALESCE(SUM(IF(`__ivm_x_2` IS NULL, 0, `__ivm_d`)), 0) AS `__ivm_nn_2`,
  CASE
    WHEN SUM(IF(`__ivm_d` > 0, `__ivm_x_2`, NULL)) IS NULL
    THEN -SUM(IF(`__ivm_d` < 0, `__ivm_x_2`, NULL))
    WHEN SUM(IF(`__ivm_d` < 0, `__ivm_x_2`, NULL)) IS NULL
    THEN SUM(IF(`__ivm_d` > 0, `__ivm_x_2`, NULL))
    ELSE SUM(IF(`__ivm_d` > 0, `__ivm_x_2`, NULL)) - SUM(IF(`__ivm_d` < 0, `__ivm_x_2`, NULL))
  END AS `__ivm_a_2`,
  MAX(IF(`__ivm_d` > 0, `__ivm_x_3`, NULL)) AS `__ivm_a_3`,
  MAX(IF(`__ivm_d` < 0, `__ivm_x_3`, NULL)) AS `__ivm_del_3`
FROM (
  SELECT
    `o`.`cust` AS `__ivm_g_0`,
    `c`.`name` AS `__ivm_g_1`,
    `o`.`amt` AS `__ivm_x_1`,
    `o`.`amt` AS `__ivm_x_2`,
    `o`.`amt` AS `__ivm_x_3`,
    `o`.`__ivm_d` AS `__ivm_d`
  FROM (
    SELECT
      `id`,
      `cust`,
      `amt`,
      `note`,
      `__ivm_rid`,
      `__ivm_s` AS `__ivm_d`
    FROM (
      SELECT
        `id`,
        `cust`,
        ANY_VALUE(`amt`) AS `amt`,
        `note`,
        `__ivm_rid`,
        SUM(`__ivm_sign`) AS `__ivm_d`
      FROM (
        SELECT
          `id`,
          `cust`,
          `amt`,
          `note`,
          XXHASH64(`id`, `cust`, `amt`, `note`, `id` IS NULL, `cust` IS NULL, `amt` IS NULL, `note` IS NULL) AS `__ivm_rid`,
          IF(`_change_type` IN ('insert', 'update_postimage'), 1, -1) AS `__ivm_sign`
        FROM TABLE_CHANGES('`db`.`o`', 4, 4)
      ) AS `__ivm_feed`
      GROUP BY
        `__ivm_rid`,
        `id`,
        `cust`,
        CAST(`amt` AS STRING),
        `note`
      HAVING
        SUM(`__ivm_sign`) <> 0
    ) AS __ivm_n
    LATERAL VIEW
    EXPLODE(ARRAY_REPEAT(IF(`__ivm_d` > 0, 1, -1), CAST(ABS(`__ivm_d`) AS INT))) __ivm_e AS `__ivm_s`
  ) AS `o`
  JOIN (
    SELECT
      `cid`,
      `name`
    FROM `db`.`c` VERSION AS OF 5
  ) AS `c`
    ON `o`.`cust` = `c`.`cid`
  WHERE
    `o`.`id` > 0
  UNION ALL
  SELECT
    `o`.`cust` AS `__ivm_g_0`,
    `c`.`name` AS `__ivm_g_1`,
    `o`.`amt` AS `__ivm_x_1`,
    `o`.`amt` AS `__ivm_x_2`,
    `o`.`amt` AS `__ivm_x_3`,
    `c`.`__ivm_d` AS `__ivm_d`
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
      `name`,
      `__ivm_rid`,
      `__ivm_s` AS `__ivm_d`
    FROM (
      SELECT
        `cid`,
        `name`,
        `__ivm_rid`,
        SUM(`__ivm_sign`) AS `__ivm_d`
      FROM (
        SELECT
          `cid`,
          `name`,
          XXHASH64(`cid`, `name`, `cid` IS NULL, `name` IS NULL) AS `__ivm_rid`,
          IF(`_change_type` IN ('insert', 'update_postimage'), 1, -1) AS `__ivm_sign`
        FROM TABLE_CHANGES('`db`.`c`', 6, 7)
      ) AS `__ivm_feed`
      GROUP BY
        `__ivm_rid`,
        `cid`,
        `name`
      HAVING
        SUM(`__ivm_sign`) <> 0
    ) AS __ivm_n
    LATERAL VIEW
    EXPLODE(ARRAY_REPEAT(IF(`__ivm_d` > 0, 1, -1), CAST(ABS(`__ivm_d`) AS INT))) __ivm_e AS `__ivm_s`
  ) AS `c`
    ON `o`.`cust` = `c`.`cid`
  WHERE
    `o`.`id` > 0
) AS `__ivm_t`
GROUP BY
  `__ivm_g_0`,
  `__ivm_g_1`
