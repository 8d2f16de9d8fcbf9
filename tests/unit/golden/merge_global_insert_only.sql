MERGE INTO `db`.`v__ivm` AS `t`
USING `__ivm_d_x` AS s
ON TRUE
WHEN MATCHED THEN UPDATE SET
  `__ivm_count` = IF(
    `t`.`__ivm_count` + `s`.`__ivm_count` >= 0,
    `t`.`__ivm_count` + `s`.`__ivm_count`,
    CAST(RAISE_ERROR(
      'fast_mv db.v__ivm: the change set removes rows a group does not hold; its stored state is inconsistent: run dbt with --full-refresh for this model'
    ) AS BIGINT)
  ),
  `__ivm_a_1` = LEAST(`t`.`__ivm_a_1`, `s`.`__ivm_a_1`),
  `__ivm_m_1` = IF(`t`.`__ivm_a_1` = LEAST(`t`.`__ivm_a_1`, `s`.`__ivm_a_1`), `t`.`__ivm_m_1`, 0) + IF(`s`.`__ivm_a_1` = LEAST(`t`.`__ivm_a_1`, `s`.`__ivm_a_1`), `s`.`__ivm_m_1`, 0) - IF(`s`.`__ivm_del_1` = LEAST(`t`.`__ivm_a_1`, `s`.`__ivm_a_1`), `s`.`__ivm_delm_1`, 0)
WHEN NOT MATCHED AND `s`.`__ivm_count` <> 0 THEN INSERT (`__ivm_count`, `__ivm_a_1`, `__ivm_m_1`) VALUES (
  IF(
    `s`.`__ivm_count` >= 1,
    `s`.`__ivm_count`,
    CAST(RAISE_ERROR(
      'fast_mv db.v__ivm: the change set removes rows a group does not hold; its stored state is inconsistent: run dbt with --full-refresh for this model'
    ) AS BIGINT)
  ),
  `s`.`__ivm_a_1`,
  `s`.`__ivm_m_1`
)
