-- Three-way join: orders, customers, regions.
select
    o.order_id,
    o.amount,
    c.name as customer_name,
    r.region_name
from {{ source('shop', 'orders') }} o
join {{ source('shop', 'customers') }} c on o.customer_id = c.customer_id
join {{ source('shop', 'regions') }} r on c.region_id = r.region_id
