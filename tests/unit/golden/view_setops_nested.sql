SELECT
  CAST(`cust` AS BIGINT) AS `cust`
FROM (
  SELECT
    *,
    GREATEST(IF(`__ivm_c0` + `__ivm_c1` > 0, 1, 0) - IF(`__ivm_c2` > 0, 1, 0), 0) + IF(`__ivm_c3` > 0 AND `__ivm_c4` > 0, 1, 0) AS `__ivm_count`
  FROM `db`.`v__ivm`
  WHERE
    GREATEST(IF(`__ivm_c0` + `__ivm_c1` > 0, 1, 0) - IF(`__ivm_c2` > 0, 1, 0), 0) + IF(`__ivm_c3` > 0 AND `__ivm_c4` > 0, 1, 0) > 0
) AS `__ivm_r`
LATERAL VIEW
EXPLODE(SEQUENCE(1, `__ivm_count`)) __ivm_e AS `__ivm_n`
