SELECT DISTINCT
  `__ivm_p_0`
FROM (
  SELECT
    `__ivm_p_0`
  FROM (
    SELECT
      `u`.`c_cid` AS `__ivm_p_0`,
      `u`.`__ivm_d` AS `__ivm_d`
    FROM (
      SELECT
        `__ivm_u0` AS `u_cust`,
        `__ivm_u1` AS `u_amt`,
        `__ivm_u2` AS `c_name`,
        `__ivm_u3` AS `c_cid`,
        `__ivm_d`
      FROM (
        SELECT
          `o`.`cust` AS `__ivm_u0`,
          `o`.`amt` AS `__ivm_u1`,
          `c`.`name` AS `__ivm_u2`,
          `c`.`cid` AS `__ivm_u3`,
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
            `cid`,
            `name`
          FROM `db`.`c` VERSION AS OF 5
        ) AS `c`
          ON `o`.`cust` = `c`.`cid`
        UNION ALL
        SELECT
          `o`.`cust` AS `__ivm_u0`,
          `o`.`amt` AS `__ivm_u1`,
          `c`.`name` AS `__ivm_u2`,
          `c`.`cid` AS `__ivm_u3`,
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
            `name`,
            `__ivm_rid`,
            `__ivm_s` AS `__ivm_d`
          FROM `__ivm_chg_1`
          LATERAL VIEW
          EXPLODE(ARRAY_REPEAT(IF(`__ivm_d` > 0, 1, -1), CAST(ABS(`__ivm_d`) AS INT))) __ivm_e AS `__ivm_s`
        ) AS `c`
          ON `o`.`cust` = `c`.`cid`
        UNION ALL
        SELECT
          `r`.`cid` AS `__ivm_u0`,
          2.0 AS `__ivm_u1`,
          `c`.`name` AS `__ivm_u2`,
          `c`.`cid` AS `__ivm_u3`,
          `r`.`__ivm_d` AS `__ivm_d`
        FROM (
          SELECT
            `cid`,
            `__ivm_rid`,
            `__ivm_s` AS `__ivm_d`
          FROM `__ivm_chg_2`
          LATERAL VIEW
          EXPLODE(ARRAY_REPEAT(IF(`__ivm_d` > 0, 1, -1), CAST(ABS(`__ivm_d`) AS INT))) __ivm_e AS `__ivm_s`
        ) AS `r`
        JOIN (
          SELECT
            `cid`,
            `name`
          FROM `db`.`c` VERSION AS OF 5
        ) AS `c`
          ON `r`.`cid` = `c`.`cid`
        UNION ALL
        SELECT
          `r`.`cid` AS `__ivm_u0`,
          2.0 AS `__ivm_u1`,
          `c`.`name` AS `__ivm_u2`,
          `c`.`cid` AS `__ivm_u3`,
          `c`.`__ivm_d` AS `__ivm_d`
        FROM (
          SELECT
            `cid`
          FROM `db`.`r` VERSION AS OF 6
        ) AS `r`
        JOIN (
          SELECT
            `cid`,
            `name`,
            `__ivm_rid`,
            `__ivm_s` AS `__ivm_d`
          FROM `__ivm_chg_3`
          LATERAL VIEW
          EXPLODE(ARRAY_REPEAT(IF(`__ivm_d` > 0, 1, -1), CAST(ABS(`__ivm_d`) AS INT))) __ivm_e AS `__ivm_s`
        ) AS `c`
          ON `r`.`cid` = `c`.`cid`
        UNION ALL
        SELECT
          `u_cust`,
          `u_amt`,
          `c_name`,
          `c_cid`,
          0 AS `__ivm_d`
        FROM (
          SELECT
            `__ivm_u0` AS `u_cust`,
            `__ivm_u1` AS `u_amt`,
            `__ivm_u2` AS `c_name`,
            `__ivm_u3` AS `c_cid`
          FROM (
            SELECT
              `o`.`cust` AS `__ivm_u0`,
              `o`.`amt` AS `__ivm_u1`,
              `c`.`name` AS `__ivm_u2`,
              `c`.`cid` AS `__ivm_u3`
            FROM (
              SELECT
                `cust`,
                `amt`
              FROM `db`.`o` VERSION AS OF 4
            ) AS `o`
            JOIN (
              SELECT
                `cid`,
                `name`
              FROM `db`.`c` VERSION AS OF 7
            ) AS `c`
              ON `o`.`cust` = `c`.`cid`
            UNION ALL
            SELECT
              `r`.`cid` AS `__ivm_u0`,
              2.0 AS `__ivm_u1`,
              `c`.`name` AS `__ivm_u2`,
              `c`.`cid` AS `__ivm_u3`
            FROM (
              SELECT
                `cid`
              FROM `db`.`r` VERSION AS OF 6
            ) AS `r`
            JOIN (
              SELECT
                `cid`,
                `name`
              FROM `db`.`c` VERSION AS OF 7
            ) AS `c`
              ON `r`.`cid` = `c`.`cid`
          ) AS `__ivm_lu`
        ) AS `u`
        WHERE
          FALSE
      ) AS `__ivm_lu`
    ) AS `u`
  ) AS `__ivm_lc`
) AS `__ivm_n`
