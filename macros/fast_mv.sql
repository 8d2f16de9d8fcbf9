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

  {#-- validate (the contract first: before anything is written), then build or refresh: one commit on
       the view's storage (and, for a configuration change applied in place, its alter after) --#}
  {%- do fast_mv_enforce_contract(sql, target_relation) -%}
  {%- set result = adapter.fast_mv_materialize(this, sql, full_refresh=should_full_refresh(),
                                              unique_key=config.get('unique_key'),
                                              deterministic_functions=config.get('deterministic_functions'),
                                              refresh_policy=config.get('refresh_policy'),
                                              cluster_by=config.get('cluster_by'),
                                              storage={'file_format': config.get('file_format'),
                                                       'tblproperties': config.get('tblproperties'),
                                                       'partition_by': config.get('partition_by'),
                                                       'liquid_clustered_by': config.get('liquid_clustered_by'),
                                                       'location_root': config.get('location_root')},
                                              empty=flags.EMPTY,
                                              enable_change_feed=config.get('enable_change_feed'),
                                              change_feed=(downstream | length > 0),
                                              on_configuration_change=config.get('on_configuration_change'),
                                              docs=fast_mv_docs(model)) -%}
  {%- set changed = "Configuration changes were identified and `on_configuration_change` was set to `"
                    ~ result['config_change'] ~ "` for `" ~ target_relation.render() ~ "`" -%}
  {%- if result['config_change'] == 'fail' -%}
    {%- do exceptions.raise_fail_fast_error(changed) -%}
  {%- elif result['config_change'] == 'continue' -%}
    {%- do exceptions.warn(changed) -%}
  {%- endif -%}
  {%- for warning in result['warnings'] -%}
    {%- do exceptions.warn(warning) -%}
  {%- endfor -%}
  {%- do store_raw_result(name='main', message=result['message'], code='OK',
                          rows_affected=result['inserted'] + result['deleted']) -%}

  {{ run_hooks(post_hooks, inside_transaction=False) }}

  {%- set grant_config = config.get('grants') -%}
  {%- do apply_grants(target_relation, grant_config, should_revoke=(result['action'] == 'built')) -%}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
