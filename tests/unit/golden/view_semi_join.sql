SELECT
  `id`,
  `note`
FROM `db`.`v__ivm`
LATERAL VIEW
EXPLODE(SEQUENCE(1, `__ivm_count`)) __ivm_e AS `__ivm_n`
