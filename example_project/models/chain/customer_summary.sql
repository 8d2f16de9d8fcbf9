-- Level 3: an aggregate per customer over level 2. A changed group of level 2's rows reaches it
-- as the rows that changed; groups no change touches are not read.
select
    customer_id,
    region_id,
    count(*) as orders,
    sum(amount) as spent,
    max(amount) as largest
from {{ ref('customer_order_lines') }}
group by customer_id, region_id
