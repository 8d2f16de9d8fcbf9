-- Single source: a filter and computed columns.
select
    order_id,
    customer_id,
    amount,
    amount * 1.2 as amount_with_tax,
    upper(status) as status_code
from {{ source('shop', 'orders') }}
where amount >= 100 or status is null
