{#-- The comments persist_docs puts on a fast_mv's view: the model's description (persist_docs.relation)
     and each documented column's (persist_docs.columns). The engine creates the view with them
     (`CREATE OR REPLACE VIEW v (c COMMENT …) COMMENT …`), again only when they change: a Spark view
     takes no ALTER … CHANGE COLUMN. --#}
{% macro fast_mv_docs(model) %}
  {%- set columns = {} -%}
  {%- if config.persist_column_docs() -%}
    {%- for column in model.columns.values() if column.description -%}
      {%- do columns.update({column.name: column.description}) -%}
    {%- endfor -%}
  {%- endif -%}
  {%- set relation = model.description if (config.persist_relation_docs() and model.description) else none -%}
  {{ return({'relation': relation, 'columns': columns}) }}
{% endmacro %}
