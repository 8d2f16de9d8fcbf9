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
        `o`.`amt` AS `__ivm_c_0_2`,
        `o`.`__ivm_d` AS `__ivm_d`
      FROM `__ivm_chg_0` AS `o`
      WHERE
        `o`.`amt` > 1
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
  SELECT DISTINCT
    `__ivm_k_0` AS `__ivm_p_0`,
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
        `c`.`name` <> 'x'
    ) AS `__ivm_c`
    GROUP BY
      `__ivm_k_0`,
      `__ivm_r_0`,
      `__ivm_c_0_0`,
      `__ivm_c_0_1`
    HAVING
      SUM(`__ivm_d`) <> 0
  ) AS `__ivm_n`
  WHERE
    NOT `__ivm_k_0` IS NULL
  UNION ALL
  SELECT DISTINCT
    `__ivm_k_0` AS `__ivm_p_0`,
    FALSE AS `__ivm_all`
  FROM (
    SELECT
      `__ivm_k_0`,
      `__ivm_k_1`,
      `__ivm_r_0`,
      `__ivm_c_0_0`,
      `__ivm_c_0_1`
    FROM (
      SELECT
        `r`.`cid` AS `__ivm_k_0`,
        `r`.`cid` AS `__ivm_k_1`,
        `r`.`__ivm_rid` AS `__ivm_r_0`,
        `r`.`cid` AS `__ivm_c_0_0`,
        `r`.`label` AS `__ivm_c_0_1`,
        `r`.`__ivm_d` AS `__ivm_d`
      FROM `__ivm_chg_2` AS `r`
      WHERE
        NOT `r`.`label` IS NULL
    ) AS `__ivm_c`
    GROUP BY
      `__ivm_k_0`,
      `__ivm_k_1`,
      `__ivm_r_0`,
      `__ivm_c_0_0`,
      `__ivm_c_0_1`
    HAVING
      SUM(`__ivm_d`) <> 0
  ) AS `__ivm_n`
  WHERE
    NOT `__ivm_k_0` IS NULL
) AS `__ivm_k`
