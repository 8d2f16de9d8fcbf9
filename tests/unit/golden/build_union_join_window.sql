SELECT
  `cust`,
  `amt`,
  `name`,
  `lo`,
  `__ivm_p_0`,
  COUNT(*) AS `__ivm_count`
FROM (
  SELECT
    `u`.`u_cust` AS `cust`,
    `u`.`u_amt` AS `amt`,
    `u`.`c_name` AS `name`,
    MIN(`u`.`u_amt`) OVER (
      PARTITION BY `u`.`c_cid`
      ORDER BY `u`.`u_amt`
      rows BETWEEN 2 preceding AND CURRENT ROW
    ) AS `lo`,
    `u`.`c_cid` AS `__ivm_p_0`
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
) AS `__ivm_v`
GROUP BY
  `cust`,
  `amt`,
  `name`,
  `lo`,
  `__ivm_p_0`
