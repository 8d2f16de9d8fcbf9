MERGE INTO `db`.`v__ivm` AS `t`
USING `__ivm_delta_x` AS s
ON `t`.`id` IS NOT DISTINCT FROM `s`.`id`
AND `t`.`amt` IS NOT DISTINCT FROM `s`.`amt`
AND `t`.`__ivm_p_0` IS NOT DISTINCT FROM `s`.`__ivm_p_0`
WHEN MATCHED AND `t`.`__ivm_count` + `s`.`__ivm_d` = 0 THEN DELETE
WHEN MATCHED THEN UPDATE SET
  `__ivm_count` = IF(
    `t`.`__ivm_count` + `s`.`__ivm_d` > 0,
    `t`.`__ivm_count` + `s`.`__ivm_d`,
    CAST(RAISE_ERROR(
      'fast_mv db.v__ivm: the recomputed keys remove rows the view does not hold; its stored state is inconsistent: run dbt with --full-refresh for this model'
    ) AS BIGINT)
  )
WHEN NOT MATCHED THEN INSERT (`id`, `amt`, `__ivm_p_0`, `__ivm_count`) VALUES (
  `s`.`id`,
  `s`.`amt`,
  `s`.`__ivm_p_0`,
  IF(
    `s`.`__ivm_d` > 0,
    `s`.`__ivm_d`,
    CAST(RAISE_ERROR(
      'fast_mv db.v__ivm: the recomputed keys remove rows the view does not hold; its stored state is inconsistent: run dbt with --full-refresh for this model'
    ) AS BIGINT)
  )
)
