SELECT
  CAST(`__ivm_g_0` AS INT) AS `cust`,
  CAST(`__ivm_g_1` AS STRING) AS `name`,
  CAST(`__ivm_count` AS BIGINT) AS `n`,
  CAST(`__ivm_a_1` AS DOUBLE) AS `total`,
  CAST(IF(`__ivm_nn_2` = 0, NULL, CAST(`__ivm_a_2` AS DOUBLE) / CAST(`__ivm_nn_2` AS DOUBLE)) AS DOUBLE) AS `mean`,
  CAST(`__ivm_a_3` AS DOUBLE) AS `top`,
  CAST(`__ivm_a_4` AS BIGINT) AS `notes`
FROM `db`.`v__ivm`
WHERE
  `__ivm_a_1` > 10
