-- Level 2: the staged orders joined with their customer. Refreshed from the change feed of
-- stg_orders' storage (stg_orders' own changes, as ref('stg_orders') shows them) and of customers.
select
    o.order_id,
    o.amount,
    o.status,
    c.customer_id,
    c.region_id
from {{ ref('stg_orders') }} o
join {{ source('shop', 'customers') }} c on o.customer_id = c.customer_id
