{#-- dbt run-operation setup_shop --args '{orders: 100000}'
     (Re)creates the example's Delta sources with change data feed on. --#}
{% macro setup_shop(orders=100000, customers=1000) %}
  {% set src = 'ivm_example_src' %}
  {% do run_query('create database if not exists ' ~ src) %}
  {% for t in ['orders', 'customers', 'regions'] %}
    {% do run_query('drop table if exists ' ~ src ~ '.' ~ t) %}
  {% endfor %}
  {% set cdf = "using delta tblproperties (delta.enableChangeDataFeed = true)" %}
  {% do run_query('create table ' ~ src ~ '.regions (region_id int, region_name string) ' ~ cdf) %}
  {% do run_query('create table ' ~ src ~ '.customers (customer_id bigint, name string, region_id int) ' ~ cdf) %}
  {% do run_query('create table ' ~ src ~ '.orders (order_id bigint, customer_id bigint, amount double, status string) ' ~ cdf) %}
  {% do run_query("insert into " ~ src ~ ".regions values (1, 'north'), (2, 'south'), (3, 'east'), (null, 'nowhere')") %}
  {% do run_query("insert into " ~ src ~ ".customers select id, concat('customer ', id), cast(id % 4 as int) from range(" ~ customers ~ ")") %}
  {% do run_query("insert into " ~ src ~ ".orders select id, id % " ~ (customers + 50) ~ ", round((id * 37) % 500 + 0.5, 2), "
                  ~ "case when id % 7 = 0 then null when id % 3 = 0 then 'shipped' else 'open' end from range(" ~ orders ~ ")") %}
  {{ log('created ' ~ src ~ ' with ' ~ orders ~ ' orders and ' ~ customers ~ ' customers', info=True) }}
{% endmacro %}

{#-- dbt run-operation change_shop --args '{fraction: 0.001}'
     Applies inserts, updates and deletes to about `fraction` of the orders and a few customers.
     With `new_orders_only: true`, inserts `fraction` of the orders as new ones and changes nothing else. --#}
{% macro change_shop(fraction=0.001, seed=1, new_orders_only=false) %}
  {% set src = 'ivm_example_src' %}
  {% set n = run_query('select count(*) from ' ~ src ~ '.orders').columns[0].values()[0] %}
  {% if new_orders_only %}
    {% set k = [1, (n * fraction) | int] | max %}
    {% do run_query("insert into " ~ src ~ ".orders select 20000000 + " ~ seed ~ " * 1000000 + id, id % 1000, 150.0 + id, 'new' from range(" ~ k ~ ")") %}
    {{ log('changed ' ~ src ~ ': ' ~ k ~ ' new orders', info=True) }}
    {{ return(none) }}
  {% endif %}
  {% set k = [1, (n * fraction / 3) | int] | max %}
  {% set m = 1000003 %}
  {% do run_query("insert into " ~ src ~ ".orders select 10000000 + " ~ seed ~ " * 1000000 + id, id % 1000, 150.0 + id, 'new' from range(" ~ k ~ ")") %}
  {% do run_query("update " ~ src ~ ".orders set amount = amount + 100, status = 'updated' where (order_id * " ~ m ~ " + " ~ seed ~ ") % " ~ (n // k) ~ " = 1") %}
  {% do run_query("delete from " ~ src ~ ".orders where (order_id * " ~ m ~ " + " ~ seed ~ ") % " ~ (n // k) ~ " = 2") %}
  {% do run_query("update " ~ src ~ ".customers set name = concat(name, ' (renamed)') where customer_id % 250 = " ~ seed) %}
  {% do run_query("insert into " ~ src ~ ".customers values (null, 'anonymous', 1)") %}
  {{ log('changed ' ~ src ~ ': ' ~ k ~ ' orders inserted, about ' ~ k ~ ' updated and ' ~ k ~ ' deleted, 4 customers renamed', info=True) }}
{% endmacro %}
