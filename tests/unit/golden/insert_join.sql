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
  `__ivm_d` AS `__ivm_count`
FROM `__ivm_delta_x`
