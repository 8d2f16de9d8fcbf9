SELECT
  `__ivm_g_0` AS `cust`,
  `__ivm_g_1` AS `name`,
  `__ivm_count` AS `n`,
  `__ivm_a_1` AS `total`,
  IF(`__ivm_nn_2` = 0, NULL, CAST(`__ivm_a_2` AS DOUBLE) / CAST(`__ivm_nn_2` AS DOUBLE)) AS `mean`,
  `__ivm_a_3` AS `top`,
  `__ivm_a_4` AS `notes`
FROM `db`.`v__ivm`
WHERE
  `__ivm_a_1` > 10
