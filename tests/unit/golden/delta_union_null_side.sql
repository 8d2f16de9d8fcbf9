SELECT
  `name`,
  ANY_VALUE(`amt`) AS `amt`,
  SUM(`__ivm_c0`) AS `__ivm_c0`,
  SUM(`__ivm_c1`) AS `__ivm_c1`,
  SUM(`__ivm_c2`) AS `__ivm_c2`
FROM (
  SELECT
    `name`,
    `amt`,
    `__ivm_d` AS `__ivm_c0`,
    0 AS `__ivm_c1`,
    0 AS `__ivm_c2`
  FROM (
    SELECT
      CAST(`c`.`name` AS STRING) AS `name`,
      CAST(`o`.`amt` AS DOUBLE) AS `amt`,
      `c`.`__ivm_d` AS `__ivm_d`
    FROM `__ivm_chg_0` AS `c`
    JOIN (
      SELECT
        `cust`,
        `amt`
      FROM `db`.`o` VERSION AS OF 3
    ) AS `o`
      ON `o`.`cust` = `c`.`cid` AND `o`.`amt` > 0
  ) AS `__ivm_b`
  UNION ALL
  SELECT
    `name`,
    `amt`,
    `__ivm_d` AS `__ivm_c0`,
    0 AS `__ivm_c1`,
    0 AS `__ivm_c2`
  FROM (
    SELECT
      CAST(`c`.`name` AS STRING) AS `name`,
      CAST(`o`.`amt` AS DOUBLE) AS `amt`,
      `o`.`__ivm_d` AS `__ivm_d`
    FROM (
      SELECT
        `cid`,
        `name`
      FROM `db`.`c` VERSION AS OF 7
    ) AS `c`
    JOIN `__ivm_chg_1` AS `o`
      ON `o`.`cust` = `c`.`cid` AND `o`.`amt` > 0
  ) AS `__ivm_b`
  UNION ALL
  SELECT
    `name`,
    `amt`,
    0 AS `__ivm_c0`,
    `__ivm_d` AS `__ivm_c1`,
    0 AS `__ivm_c2`
  FROM (
    SELECT
      CAST(`c`.`name` AS STRING) AS `name`,
      CAST(1.0 AS DOUBLE) AS `amt`,
      `c`.`__ivm_d` AS `__ivm_d`
    FROM `__ivm_chg_2` AS `c`
    JOIN (
      SELECT
        `cid`
      FROM `db`.`r` VERSION AS OF 2
    ) AS `r`
      ON `r`.`cid` = `c`.`cid`
  ) AS `__ivm_b`
  UNION ALL
  SELECT
    `name`,
    `amt`,
    0 AS `__ivm_c0`,
    `__ivm_d` AS `__ivm_c1`,
    0 AS `__ivm_c2`
  FROM (
    SELECT
      CAST(`c`.`name` AS STRING) AS `name`,
      CAST(1.0 AS DOUBLE) AS `amt`,
      `r`.`__ivm_d` AS `__ivm_d`
    FROM (
      SELECT
        `cid`,
        `name`
      FROM `db`.`c` VERSION AS OF 7
    ) AS `c`
    JOIN `__ivm_chg_3` AS `r`
      ON `r`.`cid` = `c`.`cid`
  ) AS `__ivm_b`
  UNION ALL
  SELECT
    `name`,
    `amt`,
    0 AS `__ivm_c0`,
    0 AS `__ivm_c1`,
    `__ivm_d` AS `__ivm_c2`
  FROM (
    SELECT
      CAST(`c`.`name` AS STRING) AS `name`,
      CAST(NULL AS DOUBLE) AS `amt`,
      `__ivm_d`
    FROM (
      SELECT
        `c`,
        `u_b0`,
        `u_b1`,
        `__ivm_d`
      FROM (
        SELECT
          `c`,
          `u_b0`,
          `__ivm_d`
        FROM (
          SELECT
            STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`) AS `c`,
            `__ivm_d`
          FROM `__ivm_chg_4` AS `c`
        ) AS `__ivm_c`
        LEFT JOIN (
          SELECT
            STRUCT(`u_b0`.`cust` AS `cust`, `u_b0`.`amt` AS `amt`) AS `u_b0`
          FROM (
            SELECT
              `cust`,
              `amt`
            FROM `db`.`o` VERSION AS OF 3
          ) AS `u_b0`
        ) AS `__ivm_p`
          ON `u_b0`.`cust` = `c`.`cid` AND `u_b0`.`amt` > 0
      ) AS `__ivm_c`
      LEFT JOIN (
        SELECT
          STRUCT(`u_b1`.`cid` AS `cid`) AS `u_b1`
        FROM (
          SELECT
            `cid`
          FROM `db`.`r` VERSION AS OF 2
        ) AS `u_b1`
      ) AS `__ivm_p`
        ON `u_b1`.`cid` = `c`.`cid`
    ) AS `__ivm_v`
    WHERE
      `u_b0`.`cust` IS NULL AND `u_b1`.`cid` IS NULL
  ) AS `__ivm_b`
  UNION ALL
  SELECT
    `name`,
    `amt`,
    0 AS `__ivm_c0`,
    0 AS `__ivm_c1`,
    `__ivm_d` AS `__ivm_c2`
  FROM (
    SELECT
      CAST(`c`.`name` AS STRING) AS `name`,
      CAST(NULL AS DOUBLE) AS `amt`,
      `__ivm_d`
    FROM (
      SELECT
        `c`,
        `u_b0`,
        `u_b1`,
        `__ivm_d`
      FROM (
        SELECT
          `c`,
          `u_b0`,
          `__ivm_d`
        FROM (
          SELECT
            `c`,
            `u_b0`,
            `__ivm_d`
          FROM (
            SELECT
              STRUCT(`u_b0`.`cust` AS `cust`, `u_b0`.`amt` AS `amt`) AS `u_b0`,
              `__ivm_d`
            FROM `__ivm_chg_5` AS `u_b0`
          ) AS `__ivm_c`
          INNER JOIN (
            SELECT
              STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`) AS `c`
            FROM (
              SELECT
                `cid`,
                `name`
              FROM `db`.`c` VERSION AS OF 7
            ) AS `c`
          ) AS `__ivm_p`
            ON `u_b0`.`cust` = `c`.`cid` AND `u_b0`.`amt` > 0
          UNION ALL
          SELECT
            *
          FROM (
            SELECT
              `c`,
              IF(FALSE, `__ivm_dn`.`u_b0`, NULL) AS `u_b0`,
              IF(COALESCE(`__ivm_n`.`__ivm_n`, 0) + COALESCE(`__ivm_dn`.`__ivm_dn`, 0) = 0, 1, 0) - IF(COALESCE(`__ivm_n`.`__ivm_n`, 0) = 0, 1, 0) AS `__ivm_d`
            FROM (
              SELECT
                `c`
              FROM (
                SELECT
                  STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`) AS `c`
                FROM (
                  SELECT
                    `cid`,
                    `name`
                  FROM `db`.`c` VERSION AS OF 7
                ) AS `c`
              ) AS `__ivm_p`
              LEFT SEMI JOIN (
                SELECT
                  STRUCT(`u_b0`.`cust` AS `cust`, `u_b0`.`amt` AS `amt`) AS `u_b0`,
                  `__ivm_d`
                FROM `__ivm_chg_5` AS `u_b0`
              ) AS `__ivm_c`
                ON `u_b0`.`cust` = `c`.`cid` AND `u_b0`.`amt` > 0
            ) AS `__ivm_x`
            LEFT JOIN (
              SELECT
                `u_b0`.`cust` AS `__ivm_k0`,
                COUNT(*) AS `__ivm_n`
              FROM (
                SELECT
                  STRUCT(`u_b0`.`cust` AS `cust`, `u_b0`.`amt` AS `amt`) AS `u_b0`
                FROM (
                  SELECT
                    `cust`,
                    `amt`
                  FROM `db`.`o` VERSION AS OF 3
                ) AS `u_b0`
              ) AS `__ivm_c`
              LEFT SEMI JOIN (
                SELECT
                  `u_b0`.`cust` AS `__ivm_k0`
                FROM (
                  SELECT
                    STRUCT(`u_b0`.`cust` AS `cust`, `u_b0`.`amt` AS `amt`) AS `u_b0`,
                    `__ivm_d`
                  FROM `__ivm_chg_5` AS `u_b0`
                ) AS `__ivm_c`
              ) AS `__ivm_ck`
                ON `u_b0`.`cust` = `__ivm_ck`.`__ivm_k0`
              WHERE
                `u_b0`.`amt` > 0
              GROUP BY
                `u_b0`.`cust`
            ) AS `__ivm_n`
              ON `c`.`cid` = `__ivm_n`.`__ivm_k0`
            LEFT JOIN (
              SELECT
                `u_b0`.`cust` AS `__ivm_k0`,
                SUM(`__ivm_d`) AS `__ivm_dn`,
                ANY_VALUE(`u_b0`) AS `u_b0`
              FROM (
                SELECT
                  STRUCT(`u_b0`.`cust` AS `cust`, `u_b0`.`amt` AS `amt`) AS `u_b0`,
                  `__ivm_d`
                FROM `__ivm_chg_5` AS `u_b0`
              ) AS `__ivm_c`
              WHERE
                `u_b0`.`amt` > 0
              GROUP BY
                `u_b0`.`cust`
            ) AS `__ivm_dn`
              ON `c`.`cid` = `__ivm_dn`.`__ivm_k0`
          ) AS `__ivm_s`
          WHERE
            `__ivm_d` <> 0
        ) AS `__ivm_u`
      ) AS `__ivm_c`
      LEFT JOIN (
        SELECT
          STRUCT(`u_b1`.`cid` AS `cid`) AS `u_b1`
        FROM (
          SELECT
            `cid`
          FROM `db`.`r` VERSION AS OF 2
        ) AS `u_b1`
      ) AS `__ivm_p`
        ON `u_b1`.`cid` = `c`.`cid`
    ) AS `__ivm_v`
    WHERE
      `u_b0`.`cust` IS NULL AND `u_b1`.`cid` IS NULL
  ) AS `__ivm_b`
  UNION ALL
  SELECT
    `name`,
    `amt`,
    0 AS `__ivm_c0`,
    0 AS `__ivm_c1`,
    `__ivm_d` AS `__ivm_c2`
  FROM (
    SELECT
      CAST(`c`.`name` AS STRING) AS `name`,
      CAST(NULL AS DOUBLE) AS `amt`,
      `__ivm_d`
    FROM (
      SELECT
        `c`,
        `u_b0`,
        `u_b1`,
        `__ivm_d`
      FROM (
        SELECT
          `c`,
          `u_b0`,
          `u_b1`,
          `__ivm_d`
        FROM (
          SELECT
            STRUCT(`u_b1`.`cid` AS `cid`) AS `u_b1`,
            `__ivm_d`
          FROM `__ivm_chg_6` AS `u_b1`
        ) AS `__ivm_c`
        INNER JOIN (
          SELECT
            `c`,
            `u_b0`
          FROM (
            SELECT
              STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`) AS `c`
            FROM (
              SELECT
                `cid`,
                `name`
              FROM `db`.`c` VERSION AS OF 7
            ) AS `c`
          ) AS `__ivm_l`
          LEFT JOIN (
            SELECT
              STRUCT(`u_b0`.`cust` AS `cust`, `u_b0`.`amt` AS `amt`) AS `u_b0`
            FROM (
              SELECT
                `cust`,
                `amt`
              FROM `db`.`o` VERSION AS OF 4
            ) AS `u_b0`
          ) AS `__ivm_r`
            ON `u_b0`.`cust` = `c`.`cid` AND `u_b0`.`amt` > 0
        ) AS `__ivm_p`
          ON `u_b1`.`cid` = `c`.`cid`
        UNION ALL
        SELECT
          *
        FROM (
          SELECT
            `c`,
            `u_b0`,
            IF(FALSE, `__ivm_dn`.`u_b1`, NULL) AS `u_b1`,
            IF(COALESCE(`__ivm_n`.`__ivm_n`, 0) + COALESCE(`__ivm_dn`.`__ivm_dn`, 0) = 0, 1, 0) - IF(COALESCE(`__ivm_n`.`__ivm_n`, 0) = 0, 1, 0) AS `__ivm_d`
          FROM (
            SELECT
              `c`,
              `u_b0`
            FROM (
              SELECT
                `c`,
                `u_b0`
              FROM (
                SELECT
                  STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`) AS `c`
                FROM (
                  SELECT
                    `cid`,
                    `name`
                  FROM `db`.`c` VERSION AS OF 7
                ) AS `c`
              ) AS `__ivm_l`
              LEFT JOIN (
                SELECT
                  STRUCT(`u_b0`.`cust` AS `cust`, `u_b0`.`amt` AS `amt`) AS `u_b0`
                FROM (
                  SELECT
                    `cust`,
                    `amt`
                  FROM `db`.`o` VERSION AS OF 4
                ) AS `u_b0`
              ) AS `__ivm_r`
                ON `u_b0`.`cust` = `c`.`cid` AND `u_b0`.`amt` > 0
            ) AS `__ivm_p`
            LEFT SEMI JOIN (
              SELECT
                STRUCT(`u_b1`.`cid` AS `cid`) AS `u_b1`,
                `__ivm_d`
              FROM `__ivm_chg_6` AS `u_b1`
            ) AS `__ivm_c`
              ON `u_b1`.`cid` = `c`.`cid`
          ) AS `__ivm_x`
          LEFT JOIN (
            SELECT
              `u_b1`.`cid` AS `__ivm_k0`,
              COUNT(*) AS `__ivm_n`
            FROM (
              SELECT
                STRUCT(`u_b1`.`cid` AS `cid`) AS `u_b1`
              FROM (
                SELECT
                  `cid`
                FROM `db`.`r` VERSION AS OF 2
              ) AS `u_b1`
            ) AS `__ivm_c`
            LEFT SEMI JOIN (
              SELECT
                `u_b1`.`cid` AS `__ivm_k0`
              FROM (
                SELECT
                  STRUCT(`u_b1`.`cid` AS `cid`) AS `u_b1`,
                  `__ivm_d`
                FROM `__ivm_chg_6` AS `u_b1`
              ) AS `__ivm_c`
            ) AS `__ivm_ck`
              ON `u_b1`.`cid` = `__ivm_ck`.`__ivm_k0`
            GROUP BY
              `u_b1`.`cid`
          ) AS `__ivm_n`
            ON `c`.`cid` = `__ivm_n`.`__ivm_k0`
          LEFT JOIN (
            SELECT
              `u_b1`.`cid` AS `__ivm_k0`,
              SUM(`__ivm_d`) AS `__ivm_dn`,
              ANY_VALUE(`u_b1`) AS `u_b1`
            FROM (
              SELECT
                STRUCT(`u_b1`.`cid` AS `cid`) AS `u_b1`,
                `__ivm_d`
              FROM `__ivm_chg_6` AS `u_b1`
            ) AS `__ivm_c`
            GROUP BY
              `u_b1`.`cid`
          ) AS `__ivm_dn`
            ON `c`.`cid` = `__ivm_dn`.`__ivm_k0`
        ) AS `__ivm_s`
        WHERE
          `__ivm_d` <> 0
      ) AS `__ivm_u`
    ) AS `__ivm_v`
    WHERE
      `u_b0`.`cust` IS NULL AND `u_b1`.`cid` IS NULL
  ) AS `__ivm_b`
) AS `__ivm_u`
GROUP BY
  `name`,
  CAST(`amt` AS STRING)
HAVING
  SUM(`__ivm_c0`) <> 0 OR SUM(`__ivm_c1`) <> 0 OR SUM(`__ivm_c2`) <> 0
