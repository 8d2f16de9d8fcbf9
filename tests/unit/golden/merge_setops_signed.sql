MERGE INTO `db`.`v__ivm` AS `t`
USING `__ivm_delta_x` AS s
ON `t`.`id` IS NOT DISTINCT FROM `s`.`id`
AND CAST(`t`.`amt` AS STRING) IS NOT DISTINCT FROM CAST(`s`.`amt` AS STRING)
WHEN MATCHED AND `t`.`__ivm_c0` + `s`.`__ivm_c0` = 0 AND `t`.`__ivm_c1` + `s`.`__ivm_c1` = 0 THEN DELETE
WHEN MATCHED THEN UPDATE SET
  `__ivm_c0` = IF(
    `t`.`__ivm_c0` + `s`.`__ivm_c0` >= 0,
    `t`.`__ivm_c0` + `s`.`__ivm_c0`,
    CAST(RAISE_ERROR(
      'fast_mv db.v__ivm: a change removes copies of a row that a branch of the view does not hold; its stored state is inconsistent: run dbt with --full-refresh for this model'
    ) AS BIGINT)
  ),
  `__ivm_c1` = IF(
    `t`.`__ivm_c1` + `s`.`__ivm_c1` >= 0,
    `t`.`__ivm_c1` + `s`.`__ivm_c1`,
    CAST(RAISE_ERROR(
      'fast_mv db.v__ivm: a change removes copies of a row that a branch of the view does not hold; its stored state is inconsistent: run dbt with --full-refresh for this model'
    ) AS BIGINT)
  )
WHEN NOT MATCHED THEN INSERT (`id`, `amt`, `__ivm_c0`, `__ivm_c1`) VALUES (
  `s`.`id`,
  `s`.`amt`,
  IF(
    `s`.`__ivm_c0` >= 0,
    `s`.`__ivm_c0`,
    CAST(RAISE_ERROR(
      'fast_mv db.v__ivm: a change removes copies of a row that a branch of the view does not hold; its stored state is inconsistent: run dbt with --full-refresh for this model'
    ) AS BIGINT)
  ),
  IF(
    `s`.`__ivm_c1` >= 0,
    `s`.`__ivm_c1`,
    CAST(RAISE_ERROR(
      'fast_mv db.v__ivm: a change removes copies of a row that a branch of the view does not hold; its stored state is inconsistent: run dbt with --full-refresh for this model'
    ) AS BIGINT)
  )
)
