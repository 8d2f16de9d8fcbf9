-- Aggregate over a three-way join: revenue per region and order status. COUNT, SUM, AVG and MAX
-- are maintained from the groups' deltas; COUNT(DISTINCT) is recomputed for the groups a change touches.
select
    r.region_name,
    o.status,
    count(*) as orders,
    sum(o.amount) as revenue,
    round(avg(o.amount), 2) as avg_amount,
    max(o.amount) as largest,
    count(distinct o.customer_id) as customers
from {{ source('shop', 'orders') }} o
join {{ source('shop', 'customers') }} c on o.customer_id = c.customer_id
join {{ source('shop', 'regions') }} r on c.region_id = r.region_id
group by r.region_name, o.status
