SELECT
  1 AS one
FROM `__ivm_delta_x` AS s
INNER JOIN `db`.`v__ivm` AS `t`
  ON TRUE
WHERE
  `s`.`__ivm_del_1` <= `t`.`__ivm_a_1`
