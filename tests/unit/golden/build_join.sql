SELECT
  `id`,
  `name`,
  `__ivm_rid_0`,
  `__ivm_rid_1`,
  COUNT(*) AS `__ivm_count`
FROM (
  SELECT
    `o`.`id` AS `id`,
    `c`.`name` AS `name`,
    `o`.`__ivm_rid` AS `__ivm_rid_0`,
    `c`.`__ivm_rid` AS `__ivm_rid_1`
  FROM (
    SELECT
      `id`,
      `cust`,
      `amt`,
      XXHASH64(`id`, `cust`, `amt`, `id` IS NULL, `cust` IS NULL, `amt` IS NULL) AS `__ivm_rid`
    FROM `db`.`o` VERSION AS OF 3
  ) AS `o`
  JOIN (
    SELECT
      `cid`,
      `name`,
      XXHASH64(`cid`, `name`, `cid` IS NULL, `name` IS NULL) AS `__ivm_rid`
    FROM `db`.`c` VERSION AS OF 5
  ) AS `c`
    ON `o`.`cust` = `c`.`cid`
  WHERE
    `o`.`amt` > 1
) AS `__ivm_v`
GROUP BY
  `id`,
  `name`,
  `__ivm_rid_0`,
  `__ivm_rid_1`
