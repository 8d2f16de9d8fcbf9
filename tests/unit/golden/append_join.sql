INSERT INTO `db`.`v__ivm` (
  `id`,
  `name`,
  `__ivm_rid_0`,
  `__ivm_rid_1`,
  `__ivm_count`
)
SELECT
  `id`,
  `name`,
  `__ivm_rid_0`,
  `__ivm_rid_1`,
  CASE
    WHEN `__ivm_d` < 1
    THEN CAST(RAISE_ERROR(
      'fast_mv db.v__ivm: an appended source row removed a view row; nothing was written'
    ) AS BIGINT)
    WHEN NOT (
      NOT `id` IS NULL AND NOT `name` IS NULL
    )
    THEN CAST(RAISE_ERROR(
      'fast_mv: an appended row has a NULL unique_key, so it may repeat a stored row: db.v__ivm'
    ) AS BIGINT)
    WHEN `__ivm_d` > 1 OR COUNT(*) OVER (PARTITION BY `id`, `name`) > 1
    THEN CAST(RAISE_ERROR('key repeats') AS BIGINT)
    ELSE 1
  END AS `__ivm_count`
FROM (
  SELECT
    `id`,
    `name`,
    `__ivm_rid_0`,
    `__ivm_rid_1`,
    SUM(`__ivm_d`) AS `__ivm_d`
  FROM (
    SELECT /*+ BROADCAST(`o`) */
      `o`.`id` AS `id`,
      `c`.`name` AS `name`,
      `o`.`__ivm_d` AS `__ivm_d`,
      `o`.`__ivm_rid` AS `__ivm_rid_0`,
      `c`.`__ivm_rid` AS `__ivm_rid_1`
    FROM (
      SELECT
        `id`,
        `cust`,
        ANY_VALUE(`amt`) AS `amt`,
        `__ivm_rid`,
        SUM(`__ivm_sign`) AS `__ivm_d`
      FROM (
        SELECT
          `id`,
          `cust`,
          `amt`,
          XXHASH64(`id`, `cust`, `amt`, `id` IS NULL, `cust` IS NULL, `amt` IS NULL) AS `__ivm_rid`,
          IF(`_change_type` IN ('insert', 'update_postimage'), 1, -1) AS `__ivm_sign`
        FROM TABLE_CHANGES('`db`.`o`', 4, 4)
      ) AS `__ivm_feed`
      GROUP BY
        `__ivm_rid`,
        `id`,
        `cust`,
        CAST(`amt` AS STRING)
      HAVING
        SUM(`__ivm_sign`) <> 0
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
    UNION ALL
    SELECT /*+ BROADCAST(`c`) */
      `o`.`id` AS `id`,
      `c`.`name` AS `name`,
      `c`.`__ivm_d` AS `__ivm_d`,
      `o`.`__ivm_rid` AS `__ivm_rid_0`,
      `c`.`__ivm_rid` AS `__ivm_rid_1`
    FROM (
      SELECT
        `id`,
        `cust`,
        `amt`,
        XXHASH64(`id`, `cust`, `amt`, `id` IS NULL, `cust` IS NULL, `amt` IS NULL) AS `__ivm_rid`
      FROM `db`.`o` VERSION AS OF 4
    ) AS `o`
    JOIN (
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
      ON `o`.`cust` = `c`.`cid`
    WHERE
      `o`.`amt` > 1
  ) AS `__ivm_v`
  GROUP BY
    `id`,
    `name`,
    `__ivm_rid_0`,
    `__ivm_rid_1`
  HAVING
    SUM(`__ivm_d`) <> 0
) AS `__ivm_a`
