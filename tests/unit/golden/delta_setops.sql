SELECT
  `id`,
  `name`,
  SUM(`__ivm_c0`) AS `__ivm_c0`,
  SUM(`__ivm_c1`) AS `__ivm_c1`
FROM (
  SELECT
    `id`,
    `name`,
    `__ivm_d` AS `__ivm_c0`,
    0 AS `__ivm_c1`
  FROM (
    SELECT
      CAST(`o`.`id` AS INT) AS `id`,
      CAST(`c`.`name` AS STRING) AS `name`,
      `o`.`__ivm_d` AS `__ivm_d`
    FROM `__ivm_chg_0` AS `o`
    JOIN (
      SELECT
        `cid`,
        `name`
      FROM `db`.`c` VERSION AS OF 5
    ) AS `c`
      ON `o`.`cust` = `c`.`cid`
  ) AS `__ivm_b`
  UNION ALL
  SELECT
    `id`,
    `name`,
    `__ivm_d` AS `__ivm_c0`,
    0 AS `__ivm_c1`
  FROM (
    SELECT
      CAST(`o`.`id` AS INT) AS `id`,
      CAST(`c`.`name` AS STRING) AS `name`,
      `c`.`__ivm_d` AS `__ivm_d`
    FROM (
      SELECT
        `id`,
        `cust`
      FROM `db`.`o` VERSION AS OF 4
    ) AS `o`
    JOIN `__ivm_chg_1` AS `c`
      ON `o`.`cust` = `c`.`cid`
  ) AS `__ivm_b`
  UNION ALL
  SELECT
    `id`,
    `name`,
    0 AS `__ivm_c0`,
    `__ivm_d` AS `__ivm_c1`
  FROM (
    SELECT
      CAST(`r`.`rid` AS INT) AS `id`,
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
            STRUCT(`r`.`rid` AS `rid`, `r`.`cid` AS `cid`) AS `r`
          FROM (
            SELECT
              `rid`,
              `cid`
            FROM `db`.`r` VERSION AS OF 2
          ) AS `r`
        ) AS `__ivm_p`
          ON `r`.`cid` = `c`.`cid`
        UNION ALL
        SELECT
          *
        FROM (
          SELECT
            `r`,
            IF(FALSE, `__ivm_dn`.`c`, NULL) AS `c`,
            IF(COALESCE(`__ivm_n`.`__ivm_n`, 0) + COALESCE(`__ivm_dn`.`__ivm_dn`, 0) = 0, 1, 0) - IF(COALESCE(`__ivm_n`.`__ivm_n`, 0) = 0, 1, 0) AS `__ivm_d`
          FROM (
            SELECT
              `r`
            FROM (
              SELECT
                STRUCT(`r`.`rid` AS `rid`, `r`.`cid` AS `cid`) AS `r`
              FROM (
                SELECT
                  `rid`,
                  `cid`
                FROM `db`.`r` VERSION AS OF 2
              ) AS `r`
            ) AS `__ivm_p`
            LEFT SEMI JOIN (
              SELECT
                STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`) AS `c`,
                `__ivm_d`
              FROM `__ivm_chg_3` AS `c`
            ) AS `__ivm_c`
              ON `r`.`cid` = `c`.`cid`
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
                FROM `__ivm_chg_3` AS `c`
              ) AS `__ivm_c`
            ) AS `__ivm_ck`
              ON `c`.`cid` = `__ivm_ck`.`__ivm_k0`
            GROUP BY
              `c`.`cid`
          ) AS `__ivm_n`
            ON `r`.`cid` = `__ivm_n`.`__ivm_k0`
          LEFT JOIN (
            SELECT
              `c`.`cid` AS `__ivm_k0`,
              SUM(`__ivm_d`) AS `__ivm_dn`,
              ANY_VALUE(`c`) AS `c`
            FROM (
              SELECT
                STRUCT(`c`.`cid` AS `cid`, `c`.`name` AS `name`) AS `c`,
                `__ivm_d`
              FROM `__ivm_chg_3` AS `c`
            ) AS `__ivm_c`
            GROUP BY
              `c`.`cid`
          ) AS `__ivm_dn`
            ON `r`.`cid` = `__ivm_dn`.`__ivm_k0`
        ) AS `__ivm_s`
        WHERE
          `__ivm_d` <> 0
      ) AS `__ivm_u`
    ) AS `__ivm_v`
  ) AS `__ivm_b`
) AS `__ivm_u`
GROUP BY
  `id`,
  `name`
HAVING
  SUM(`__ivm_c0`) <> 0 OR SUM(`__ivm_c1`) <> 0
