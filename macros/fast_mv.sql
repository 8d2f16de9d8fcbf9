{#-- fast_mv: a materialized view that `dbt run` refreshes from the sources' change data feeds.
     All SQL comes from the dbt-ivm engine; this macro only sequences the dbt side. --#}
{% materialization fast_mv, adapter='ivm_spark' %}
  {%- set target_relation = this.incorporate(type='view') -%}

  {{ run_hooks(pre_hooks, inside_transaction=False) }}

  {#-- another fast_mv reads this one: its storage keeps a change data feed --#}
  {%- set downstream = [] -%}
  {%- for node in graph.nodes.values() if node.config.materialized == 'fast_mv'
                                        and model.unique_id in node.depends_on.nodes -%}
    {%- do downstream.append(node.unique_id) -%}
  {%- endfor -%}

  {#-- validate, then build or refresh: one commit on the view's storage --#}
  {%- set result = adapter.fast_mv_materialize(this, sql, full_refresh=should_full_refresh(),
                                              unique_key=config.get('unique_key'),
                                              deterministic_functions=config.get('deterministic_functions'),
                                              refresh_policy=config.get('refresh_policy'),
                                              cluster_by=config.get('cluster_by'),
                                              storage={'file_format': config.get('file_format'),
                                                       'tblproperties': config.get('tblproperties'),
                                                       'partition_by': config.get('partition_by'),
                                                       'liquid_clustered_by': config.get('liquid_clustered_by')},
                                              empty=flags.EMPTY,
                                              enable_change_feed=config.get('enable_change_feed'),
                                              change_feed=(downstream | length > 0)) -%}
  {%- do store_raw_result(name='main', message=result['message'], code='OK',
                          rows_affected=result['inserted'] + result['deleted']) -%}

  {{ run_hooks(post_hooks, inside_transaction=False) }}

  {%- set grant_config = config.get('grants') -%}
  {%- do apply_grants(target_relation, grant_config, should_revoke=(result['action'] == 'built')) -%}
  {%- do persist_docs(target_relation, model) -%}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
