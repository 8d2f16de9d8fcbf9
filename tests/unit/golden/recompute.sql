SELECT `o`.`id` AS `id`, `c`.`name` AS `name` FROM `db`.`o` VERSION AS OF 3 AS `o` JOIN `db`.`c` VERSION AS OF 5 AS `c` ON `c`.`cid` = `o`.`cust` WHERE `o`.`amt` > 1
