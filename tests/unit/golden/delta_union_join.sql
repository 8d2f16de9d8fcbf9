SELECT
  `cust`,
  ANY_VALUE(`amt`) AS `amt`,
  `name`,
  SUM(`__ivm_c0`) AS `__ivm_c0`,
  SUM(`__ivm_c1`) AS `__ivm_c1`
FROM (
  SELECT
    `cust`,
    `amt`,
    `name`,
    `__ivm_d` AS `__ivm_c0`,
    0 AS `__ivm_c1`
  FROM (
    SELECT
      CAST(`o`.`cust` AS INT) AS `cust`,
      CAST(`o`.`amt` AS DOUBLE) AS `amt`,
      CAST(`c`.`name` AS STRING) AS `name`,
      `__ivm_d`
    FROM (
      SELECT
        `o`,
        `c`,
        `__ivm_d`
      FROM (
        SELECT
          STRUCT(`o`.`cust` AS `cust`, `o`.`amt` AS `amt`) AS `o`,
          `__ivm_d`
        FROM `__ivm_chg_0` AS `o`
      ) AS `__ivm_c`
      LEFT JOIN (
        SELECT
          STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`) AS `c`
        FROM (
          SELECT
            `cid`,
            `name`
          FROM `db`.`c` VERSION AS OF 5
        ) AS `c`
      ) AS `__ivm_p`
        ON `o`.`cust` = `c`.`cid`
    ) AS `__ivm_v`
  ) AS `__ivm_b`
  UNION ALL
  SELECT
    `cust`,
    `amt`,
    `name`,
    `__ivm_d` AS `__ivm_c0`,
    0 AS `__ivm_c1`
  FROM (
    SELECT
      CAST(`o`.`cust` AS INT) AS `cust`,
      CAST(`o`.`amt` AS DOUBLE) AS `amt`,
      CAST(`c`.`name` AS STRING) AS `name`,
      `__ivm_d`
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
            STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`) AS `c`,
            `__ivm_d`
          FROM `__ivm_chg_1` AS `c`
        ) AS `__ivm_c`
        INNER JOIN (
          SELECT
            STRUCT(`o`.`cust` AS `cust`, `o`.`amt` AS `amt`) AS `o`
          FROM (
            SELECT
              `cust`,
              `amt`
            FROM `db`.`o` VERSION AS OF 4
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
                STRUCT(`o`.`cust` AS `cust`, `o`.`amt` AS `amt`) AS `o`
              FROM (
                SELECT
                  `cust`,
                  `amt`
                FROM `db`.`o` VERSION AS OF 4
              ) AS `o`
            ) AS `__ivm_p`
            LEFT SEMI JOIN (
              SELECT
                STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`) AS `c`,
                `__ivm_d`
              FROM `__ivm_chg_1` AS `c`
            ) AS `__ivm_c`
              ON `o`.`cust` = `c`.`cid`
          ) AS `__ivm_x`
          LEFT JOIN (
            SELECT
              `c`.`cid` AS `__ivm_k0`,
              COUNT(*) AS `__ivm_n`
            FROM (
              SELECT
                STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`) AS `c`
              FROM (
                SELECT
                  `cid`,
                  `name`
                FROM `db`.`c` VERSION AS OF 5
              ) AS `c`
            ) AS `__ivm_c`
            LEFT SEMI JOIN (
              SELECT
                `c`.`cid` AS `__ivm_k0`
              FROM (
                SELECT
                  STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`) AS `c`,
                  `__ivm_d`
                FROM `__ivm_chg_1` AS `c`
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
                STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`) AS `c`,
                `__ivm_d`
              FROM `__ivm_chg_1` AS `c`
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
  ) AS `__ivm_b`
  UNION ALL
  SELECT
    `cust`,
    `amt`,
    `name`,
    0 AS `__ivm_c0`,
    `__ivm_d` AS `__ivm_c1`
  FROM (
    SELECT
      CAST(CAST(NULL AS INT) AS INT) AS `cust`,
      CAST(2.0 AS DOUBLE) AS `amt`,
      CAST(`c`.`name` AS STRING) AS `name`,
      `__ivm_d`
    FROM (
      SELECT
        `r`,
        `c`,
        `__ivm_d`
      FROM (
        SELECT
          STRUCT(`r`.`label` AS `label`) AS `r`,
          `__ivm_d`
        FROM `__ivm_chg_2` AS `r`
      ) AS `__ivm_c`
      LEFT JOIN (
        SELECT
          STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`) AS `c`
        FROM (
          SELECT
            `cid`,
            `name`
          FROM `db`.`c` VERSION AS OF 5
        ) AS `c`
      ) AS `__ivm_p`
        ON CAST(NULL AS INT) = `c`.`cid`
    ) AS `__ivm_v`
    WHERE
      NOT `r`.`label` IS NULL
  ) AS `__ivm_b`
  UNION ALL
  SELECT
    `cust`,
    `amt`,
    `name`,
    0 AS `__ivm_c0`,
    `__ivm_d` AS `__ivm_c1`
  FROM (
    SELECT
      CAST(CAST(NULL AS INT) AS INT) AS `cust`,
      CAST(2.0 AS DOUBLE) AS `amt`,
      CAST(`c`.`name` AS STRING) AS `name`,
      `__ivm_d`
    FROM (
      SELECT
        `r`,
        `c`,
        `__ivm_d`
      FROM (
        SELECT
          `r`,
          `c`,
          `__ivm_d`
        FROM (
          SELECT
            STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`) AS `c`,
            `__ivm_d`
          FROM `__ivm_chg_3` AS `c`
        ) AS `__ivm_c`
        INNER JOIN (
          SELECT
            STRUCT(`r`.`label` AS `label`) AS `r`
          FROM (
            SELECT
              `label`
            FROM `db`.`r` VERSION AS OF 6
          ) AS `r`
        ) AS `__ivm_p`
          ON CAST(NULL AS INT) = `c`.`cid`
        UNION ALL
        SELECT
          `r`,
          `c`,
          1 AS `__ivm_d`
        FROM (
          SELECT
            `r`
          FROM (
            SELECT
              STRUCT(`r`.`label` AS `label`) AS `r`
            FROM (
              SELECT
                `label`
              FROM `db`.`r` VERSION AS OF 6
            ) AS `r`
          ) AS `__ivm_p`
          LEFT SEMI JOIN (
            SELECT
              STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`) AS `c`,
              `__ivm_d`
            FROM `__ivm_chg_3` AS `c`
          ) AS `__ivm_c`
            ON CAST(NULL AS INT) = `c`.`cid`
        ) AS `__ivm_x`
        LEFT JOIN (
          SELECT
            STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`) AS `c`
          FROM (
            SELECT
              `cid`,
              `name`
            FROM `db`.`c` VERSION AS OF 7
          ) AS `c`
        ) AS `__ivm_c`
          ON CAST(NULL AS INT) = `c`.`cid`
        WHERE
          `c` IS NULL
        UNION ALL
        SELECT
          `r`,
          `c`,
          -1 AS `__ivm_d`
        FROM (
          SELECT
            `r`
          FROM (
            SELECT
              STRUCT(`r`.`label` AS `label`) AS `r`
            FROM (
              SELECT
                `label`
              FROM `db`.`r` VERSION AS OF 6
            ) AS `r`
          ) AS `__ivm_p`
          LEFT SEMI JOIN (
            SELECT
              STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`) AS `c`,
              `__ivm_d`
            FROM `__ivm_chg_3` AS `c`
          ) AS `__ivm_c`
            ON CAST(NULL AS INT) = `c`.`cid`
        ) AS `__ivm_x`
        LEFT JOIN (
          SELECT
            STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`) AS `c`
          FROM (
            SELECT
              `cid`,
              `name`
            FROM `db`.`c` VERSION AS OF 5
          ) AS `c`
        ) AS `__ivm_c`
          ON CAST(NULL AS INT) = `c`.`cid`
        WHERE
          `c` IS NULL
      ) AS `__ivm_u`
    ) AS `__ivm_v`
    WHERE
      NOT `r`.`label` IS NULL
  ) AS `__ivm_b`
) AS `__ivm_u`
GROUP BY
  `cust`,
  CAST(`amt` AS STRING),
  `name`
HAVING
  SUM(`__ivm_c0`) <> 0 OR SUM(`__ivm_c1`) <> 0
