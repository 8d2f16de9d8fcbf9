-- A three-level chain, refreshed level by level by one `dbt run` (dbt runs them in DAG order).
-- Level 1, staging: the orders that have a status. A fast_mv reads it, so its storage keeps a
-- change data feed (fast_mv turns it on where the dbt graph says another fast_mv reads a model).
select order_id, customer_id, amount, status
from {{ source('shop', 'orders') }}
where status is not null
