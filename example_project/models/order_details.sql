-- Inner join of orders with their customer: refreshed from both sources' change feeds.
-- order_id is unique here (one customer per order): declaring it lets a refresh that only adds
-- orders append them without first probing the stored rows.
{{ config(unique_key='order_id') }}
select
    o.order_id,
    o.amount,
    o.status,
    c.customer_id,
    c.name as customer_name
from {{ source('shop', 'orders') }} o
join {{ source('shop', 'customers') }} c
  on o.customer_id = c.customer_id
