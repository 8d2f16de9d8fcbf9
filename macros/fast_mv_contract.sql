{#-- contract: {enforced: true}: the model's columns (names, types, their number) are checked with
     dbt's own `get_assert_columns_equivalent` before anything is written, and fail with dbt's
     "This model has an enforced contract that failed." Constraints are not enforced on a fast_mv's
     rows (a refresh writes the changes' rows, a view holds no constraint): each is warned. --#}
{% macro fast_mv_enforce_contract(sql, relation) %}
  {%- set contract_config = config.get('contract') -%}
  {%- if contract_config and contract_config.enforced -%}
    {%- do get_assert_columns_equivalent(sql) -%}
    {%- set constraints = [] -%}
    {%- for constraint in model.constraints -%}
      {%- do constraints.append((constraint.type, constraint.columns | join(', ') or 'the model')) -%}
    {%- endfor -%}
    {%- for column in model.columns.values() -%}
      {%- for constraint in column.constraints -%}
        {%- do constraints.append((constraint.type, column.name)) -%}
      {%- endfor -%}
    {%- endfor -%}
    {%- for kind, columns in constraints -%}
      {%- do exceptions.warn("fast_mv does not enforce the " ~ kind ~ " constraint on " ~ columns ~ " of "
                             ~ relation.render() ~ ": nothing checks the view's rows against it; "
                             ~ "add a data test for it (not_null, unique, relationships, expression tests)") -%}
    {%- endfor -%}
  {%- endif -%}
{% endmacro %}
