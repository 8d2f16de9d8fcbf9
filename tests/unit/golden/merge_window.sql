MERGE INTO `db`.`v__ivm` AS `t`
USING `__ivm_delta_x` AS s
ON `t`.`key` IS NOT DISTINCT FROM `s`.`key`
AND `t`.`val` IS NOT DISTINCT FROM `s`.`val`
AND `t`.`rn` IS NOT DISTINCT FROM `s`.`rn`
AND `t`.`__ivm_p_0` IS NOT DISTINCT FROM `s`.`__ivm_p_0`
AND `t`.`__ivm_o_0` IS NOT DISTINCT FROM `s`.`__ivm_o_0`
AND `t`.`__ivm_o_1` IS NOT DISTINCT FROM `s`.`__ivm_o_1`
WHEN MATCHED AND `t`.`__ivm_count` + `s`.`__ivm_d` = 0 THEN DELETE
WHEN MATCHED THEN UPDATE SET
  `__ivm_count` = IF(
    `t`.`__ivm_count` + `s`.`__ivm_d` > 0,
    `t`.`__ivm_count` + `s`.`__ivm_d`,
    CAST(RAISE_ERROR(
      'fast_mv db.v__ivm: the recomputed partitions remove rows the view does not hold; its stored state is inconsistent: run dbt with --full-refresh for this model'
    ) AS BIGINT)
  )
WHEN NOT MATCHED THEN INSERT (`key`, `val`, `rn`, `__ivm_p_0`, `__ivm_o_0`, `__ivm_o_1`, `__ivm_count`) VALUES (
  `s`.`key`,
  `s`.`val`,
  `s`.`rn`,
  `s`.`__ivm_p_0`,
  `s`.`__ivm_o_0`,
  `s`.`__ivm_o_1`,
  IF(
    `s`.`__ivm_d` > 0,
    `s`.`__ivm_d`,
    CAST(RAISE_ERROR(
      'fast_mv db.v__ivm: the recomputed partitions remove rows the view does not hold; its stored state is inconsistent: run dbt with --full-refresh for this model'
    ) AS BIGINT)
  )
)
