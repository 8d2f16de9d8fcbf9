SELECT
  `id`,
  `name`,
  `__ivm_rid_0`,
  `__ivm_rid_1`,
  SUM(`__ivm_d`) AS `__ivm_d`
FROM (
  SELECT
    `o`.`id` AS `id`,
    `c`.`name` AS `name`,
    `__ivm_d`,
    `o`.`__ivm_rid` AS `__ivm_rid_0`,
    `c`.`__ivm_rid` AS `__ivm_rid_1`
  FROM (
    SELECT
      `o`,
      `c`,
      `__ivm_d`
    FROM (
      SELECT
        `o`,
        `c`,
        `__ivm_d`
      FROM (
        SELECT
          STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`, `c`.`__ivm_rid` AS `__ivm_rid`) AS `c`,
          `__ivm_d`
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
        ) AS `c`
      ) AS `__ivm_c`
      INNER JOIN (
        SELECT
          STRUCT(`o`.`id` AS `id`, `o`.`cust` AS `cust`, `o`.`__ivm_rid` AS `__ivm_rid`) AS `o`
        FROM (
          SELECT
            `id`,
            `cust`,
            XXHASH64(`id`, `cust`, `id` IS NULL, `cust` IS NULL) AS `__ivm_rid`
          FROM `db`.`o` VERSION AS OF 3
        ) AS `o`
      ) AS `__ivm_p`
        ON `o`.`cust` = `c`.`cid`
      UNION ALL
      SELECT
        *
      FROM (
        SELECT
          `o`,
          IF(FALSE, `__ivm_dn`.`c`, NULL) AS `c`,
          IF(COALESCE(`__ivm_n`.`__ivm_n`, 0) + COALESCE(`__ivm_dn`.`__ivm_dn`, 0) = 0, 1, 0) - IF(COALESCE(`__ivm_n`.`__ivm_n`, 0) = 0, 1, 0) AS `__ivm_d`
        FROM (
          SELECT
            `o`
          FROM (
            SELECT
              STRUCT(`o`.`id` AS `id`, `o`.`cust` AS `cust`, `o`.`__ivm_rid` AS `__ivm_rid`) AS `o`
            FROM (
              SELECT
                `id`,
                `cust`,
                XXHASH64(`id`, `cust`, `id` IS NULL, `cust` IS NULL) AS `__ivm_rid`
              FROM `db`.`o` VERSION AS OF 3
            ) AS `o`
          ) AS `__ivm_p`
          LEFT SEMI JOIN (
            SELECT
              STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`, `c`.`__ivm_rid` AS `__ivm_rid`) AS `c`,
              `__ivm_d`
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
            ) AS `c`
          ) AS `__ivm_c`
            ON `o`.`cust` = `c`.`cid`
        ) AS `__ivm_x`
        LEFT JOIN (
          SELECT
            `c`.`cid` AS `__ivm_k0`,
            COUNT(*) AS `__ivm_n`
          FROM (
            SELECT
              STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`, `c`.`__ivm_rid` AS `__ivm_rid`) AS `c`
            FROM (
              SELECT
                `cid`,
                `name`,
                XXHASH64(`cid`, `name`, `cid` IS NULL, `name` IS NULL) AS `__ivm_rid`
              FROM `db`.`c` VERSION AS OF 5
            ) AS `c`
          ) AS `__ivm_c`
          LEFT SEMI JOIN (
            SELECT
              `c`.`cid` AS `__ivm_k0`
            FROM (
              SELECT
                STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`, `c`.`__ivm_rid` AS `__ivm_rid`) AS `c`,
                `__ivm_d`
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
              ) AS `c`
            ) AS `__ivm_c`
          ) AS `__ivm_ck`
            ON `c`.`cid` = `__ivm_ck`.`__ivm_k0`
          GROUP BY
            `c`.`cid`
        ) AS `__ivm_n`
          ON `o`.`cust` = `__ivm_n`.`__ivm_k0`
        LEFT JOIN (
          SELECT
            `c`.`cid` AS `__ivm_k0`,
            SUM(`__ivm_d`) AS `__ivm_dn`,
            ANY_VALUE(`c`) AS `c`
          FROM (
            SELECT
              STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`, `c`.`__ivm_rid` AS `__ivm_rid`) AS `c`,
              `__ivm_d`
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
            ) AS `c`
          ) AS `__ivm_c`
          GROUP BY
            `c`.`cid`
        ) AS `__ivm_dn`
          ON `o`.`cust` = `__ivm_dn`.`__ivm_k0`
      ) AS `__ivm_s`
      WHERE
        `__ivm_d` <> 0
    ) AS `__ivm_u`
  ) AS `__ivm_v`
) AS `__ivm_v`
GROUP BY
  `id`,
  `name`,
  `__ivm_rid_0`,
  `__ivm_rid_1`
HAVING
  SUM(`__ivm_d`) <> 0
