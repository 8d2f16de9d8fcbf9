SELECT DISTINCT
  `__ivm_p_0`
FROM (
  SELECT
    `__ivm_p_0`,
    `__ivm_rid_0`,
    `__ivm_c_0_0`,
    `__ivm_c_0_1`,
    `__ivm_c_0_2`,
    `__ivm_rid_1`,
    `__ivm_c_1_0`,
    `__ivm_c_1_1`
  FROM (
    SELECT
      `c`.`name` AS `__ivm_p_0`,
      `o`.`__ivm_rid` AS `__ivm_rid_0`,
      `o`.`id` AS `__ivm_c_0_0`,
      `o`.`cust` AS `__ivm_c_0_1`,
      `o`.`amt` AS `__ivm_c_0_2`,
      `c`.`__ivm_rid` AS `__ivm_rid_1`,
      `c`.`cid` AS `__ivm_c_1_0`,
      `c`.`name` AS `__ivm_c_1_1`,
      `o`.`__ivm_d` AS `__ivm_d`
    FROM `__ivm_chg_0` AS `o`
    JOIN (
      SELECT
        `cid`,
        `name`,
        XXHASH64(`cid`, `name`, `cid` IS NULL, `name` IS NULL) AS `__ivm_rid`
      FROM `db`.`c` VERSION AS OF 5
    ) AS `c`
      ON `o`.`cust` = `c`.`cid`
    UNION ALL
    SELECT
      `c`.`name` AS `__ivm_p_0`,
      `o`.`__ivm_rid` AS `__ivm_rid_0`,
      `o`.`id` AS `__ivm_c_0_0`,
      `o`.`cust` AS `__ivm_c_0_1`,
      `o`.`amt` AS `__ivm_c_0_2`,
      `c`.`__ivm_rid` AS `__ivm_rid_1`,
      `c`.`cid` AS `__ivm_c_1_0`,
      `c`.`name` AS `__ivm_c_1_1`,
      `c`.`__ivm_d` AS `__ivm_d`
    FROM (
      SELECT
        `id`,
        `cust`,
        `amt`,
        XXHASH64(`id`, `cust`, `amt`, `id` IS NULL, `cust` IS NULL, `amt` IS NULL) AS `__ivm_rid`
      FROM `db`.`o` VERSION AS OF 4
    ) AS `o`
    JOIN `__ivm_chg_1` AS `c`
      ON `o`.`cust` = `c`.`cid`
  ) AS `__ivm_c`
  GROUP BY
    `__ivm_p_0`,
    `__ivm_rid_0`,
    `__ivm_c_0_0`,
    `__ivm_c_0_1`,
    `__ivm_c_0_2`,
    `__ivm_rid_1`,
    `__ivm_c_1_0`,
    `__ivm_c_1_1`
  HAVING
    SUM(`__ivm_d`) <> 0
) AS `__ivm_n`
