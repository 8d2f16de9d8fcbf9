MERGE INTO `db`.`v__ivm` AS `t`
USING `__ivm_delta_x` AS s
ON `t`.`__ivm_rid_0` = `s`.`__ivm_rid_0`
AND `t`.`__ivm_rid_1` = `s`.`__ivm_rid_1`
AND `t`.`id` IS NOT DISTINCT FROM `s`.`id`
AND `t`.`name` IS NOT DISTINCT FROM `s`.`name`
WHEN MATCHED AND `t`.`__ivm_count` + `s`.`__ivm_d` = 0 THEN DELETE
WHEN MATCHED THEN UPDATE SET
  `__ivm_count` = IF(
    `t`.`__ivm_count` + `s`.`__ivm_d` > 0,
    `t`.`__ivm_count` + `s`.`__ivm_d`,
    CAST(RAISE_ERROR(
      'fast_mv db.v__ivm: the change set removes rows the view does not hold; its stored state is inconsistent: run dbt with --full-refresh for this model'
    ) AS BIGINT)
  )
WHEN NOT MATCHED THEN INSERT (`id`, `name`, `__ivm_rid_0`, `__ivm_rid_1`, `__ivm_count`) VALUES (
  `s`.`id`,
  `s`.`name`,
  `s`.`__ivm_rid_0`,
  `s`.`__ivm_rid_1`,
  IF(
    `s`.`__ivm_d` > 0,
    `s`.`__ivm_d`,
    CAST(RAISE_ERROR(
      'fast_mv db.v__ivm: the change set removes rows the view does not hold; its stored state is inconsistent: run dbt with --full-refresh for this model'
    ) AS BIGINT)
  )
)
