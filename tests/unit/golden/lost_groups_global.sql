SELECT
  1 AS one
FROM `__ivm_delta_x` AS s
LEFT JOIN `db`.`v__ivm` AS `t`
  ON TRUE
WHERE
  NOT COALESCE(
    `s`.`__ivm_del_1` IS NULL
    OR `s`.`__ivm_del_1` > LEAST(`t`.`__ivm_a_1`, `s`.`__ivm_a_1`)
    OR (
      `s`.`__ivm_del_1` = LEAST(`t`.`__ivm_a_1`, `s`.`__ivm_a_1`)
      AND IF(`t`.`__ivm_a_1` = LEAST(`t`.`__ivm_a_1`, `s`.`__ivm_a_1`), `t`.`__ivm_m_1`, 0) + IF(`s`.`__ivm_a_1` = LEAST(`t`.`__ivm_a_1`, `s`.`__ivm_a_1`), `s`.`__ivm_m_1`, 0) - IF(`s`.`__ivm_del_1` = LEAST(`t`.`__ivm_a_1`, `s`.`__ivm_a_1`), `s`.`__ivm_delm_1`, 0) > 0
    ),
    FALSE
  )
