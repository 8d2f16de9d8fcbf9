SELECT
  1 AS one
FROM `__ivm_delta_x` AS s
LEFT JOIN `db`.`v__ivm` AS `t`
  ON TRUE
WHERE
  NOT `s`.`__ivm_del_1` IS NULL
  AND (
    (
      `t`.`__ivm_count` IS NULL OR `t`.`__ivm_a_1` IS NULL
    )
    OR `s`.`__ivm_del_1` <= `t`.`__ivm_a_1`
  )
