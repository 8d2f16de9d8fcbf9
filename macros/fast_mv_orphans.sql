{#-- dbt run-operation fast_mv_drop_orphans [--args '{dry_run: true}']
     Drops the storage (`<model>__ivm`) of each model of the project that is no longer a fast_mv:
     dbt's table, view and incremental materializations replace the view and leave the storage. --#}
{% macro fast_mv_drop_orphans(dry_run=false) %}
  {%- if execute -%}
    {%- for node in graph.nodes.values() if node.resource_type == 'model'
                                         and node.config.materialized != 'fast_mv' -%}
      {%- set storage = adapter.get_relation(database=node.database, schema=node.schema,
                                             identifier=node.alias ~ '__ivm') -%}
      {%- if storage is not none -%}
        {{ print(("would drop " if dry_run else "dropping ") ~ storage ~ ", the storage of " ~ node.name
                 ~ " when it was a fast_mv") }}
        {%- if not dry_run -%}
          {%- do adapter.drop_relation(storage) -%}
        {%- endif -%}
      {%- endif -%}
    {%- endfor -%}
  {%- endif -%}
{% endmacro %}
