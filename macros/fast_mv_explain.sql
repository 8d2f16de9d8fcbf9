{#-- dbt run-operation fast_mv_explain --args '{model: my_mv}'
     Explains a built fast_mv: class, join tree, hidden columns, refresh steps. --#}
{% macro fast_mv_explain(model) %}
  {%- if execute -%}
    {%- set nodes = graph.nodes.values() | selectattr('resource_type', 'equalto', 'model')
                                         | selectattr('name', 'equalto', model) | list -%}
    {%- if nodes | length == 0 -%}
      {{ exceptions.raise_compiler_error("fast_mv_explain: no model named '" ~ model ~ "'") }}
    {%- endif -%}
    {%- set relation = api.Relation.create(schema=nodes[0].schema, identifier=nodes[0].alias) -%}
    {{ print(adapter.fast_mv_explain(relation)) }}
  {%- endif -%}
{% endmacro %}
