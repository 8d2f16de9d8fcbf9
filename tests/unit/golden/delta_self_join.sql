SELECT
  `id`,
  `id2`,
  `__ivm_rid_0`,
  `__ivm_rid_1`,
  SUM(`__ivm_d`) AS `__ivm_d`
FROM (
  SELECT
    `a`.`id` AS `id`,
    `b`.`id` AS `id2`,
    `a`.`__ivm_d` AS `__ivm_d`,
    `a`.`__ivm_rid` AS `__ivm_rid_0`,
    `b`.`__ivm_rid` AS `__ivm_rid_1`
  FROM (
    SELECT
      `id`,
      `cust`,
      `__ivm_rid`,
      SUM(`__ivm_sign`) AS `__ivm_d`
    FROM (
      SELECT
        `id`,
        `cust`,
        XXHASH64(`id`, `cust`, `id` IS NULL, `cust` IS NULL) AS `__ivm_rid`,
        IF(`_change_type` IN ('insert', 'update_postimage'), 1, -1) AS `__ivm_sign`
      FROM TABLE_CHANGES('`db`.`o`', 2, 2)
    ) AS `__ivm_feed`
    GROUP BY
      `__ivm_rid`,
      `id`,
      `cust`
    HAVING
      SUM(`__ivm_sign`) <> 0
  ) AS `a`
  JOIN (
    SELECT
      `id`,
      XXHASH64(`id`, `id` IS NULL) AS `__ivm_rid`
    FROM `db`.`o` VERSION AS OF 1
  ) AS `b`
    ON `a`.`cust` = `b`.`id`
  UNION ALL
  SELECT
    `a`.`id` AS `id`,
    `b`.`id` AS `id2`,
    `b`.`__ivm_d` AS `__ivm_d`,
    `a`.`__ivm_rid` AS `__ivm_rid_0`,
    `b`.`__ivm_rid` AS `__ivm_rid_1`
  FROM (
    SELECT
      `id`,
      `cust`,
      XXHASH64(`id`, `cust`, `id` IS NULL, `cust` IS NULL) AS `__ivm_rid`
    FROM `db`.`o` VERSION AS OF 2
  ) AS `a`
  JOIN (
    SELECT
      `id`,
      `__ivm_rid`,
      SUM(`__ivm_sign`) AS `__ivm_d`
    FROM (
      SELECT
        `id`,
        XXHASH64(`id`, `id` IS NULL) AS `__ivm_rid`,
        IF(`_change_type` IN ('insert', 'update_postimage'), 1, -1) AS `__ivm_sign`
      FROM TABLE_CHANGES('`db`.`o`', 2, 2)
    ) AS `__ivm_feed`
    GROUP BY
      `__ivm_rid`,
      `id`
    HAVING
      SUM(`__ivm_sign`) <> 0
  ) AS `b`
    ON `a`.`cust` = `b`.`id`
) AS `__ivm_v`
GROUP BY
  `id`,
  `id2`,
  `__ivm_rid_0`,
  `__ivm_rid_1`
HAVING
  SUM(`__ivm_d`) <> 0
