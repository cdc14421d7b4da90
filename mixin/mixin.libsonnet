// training-progress-exporter as a monitoring mixin: the alert and recording rules and the
// dashboards this project ships, for kube-prometheus and other jsonnet-built stacks.
//
//   local tpe = (import 'training-progress-exporter-mixin/mixin.libsonnet') + {
//     _config+:: { grafanaUrl: 'https://grafana.example.com', alertFor+:: { TrainingJobStalled: '5m' } },
//   };
//   { 'rules.yaml': std.manifestYamlDoc(tpe.prometheusAlerts + tpe.prometheusRules) }
//
// The rules come from alerts/*.rules.yaml, the one source plain Prometheus
// loads as it is, through rules.json (the same groups as JSON, written by
// alerts/generate.py, which checks it is current); with the default _config this renders
// exactly what is shipped (tests/test_mixin.py diffs it). Per-run thresholds (stall, plateau, report timeout...) are
// series the exporter exports, set by its config or a pod's annotations, not by the rules:
// _config sets the rules' own numbers, the `for:` of each alert.
local source = import 'rules.json';

local dashboards = {
  'training-jobs.json': import '../grafana/dashboards/training-jobs.json',
  'training-job-detail.json': import '../grafana/dashboards/training-job-detail.json',
  'training-gpu-capacity.json': import '../grafana/dashboards/training-gpu-capacity.json',
};

{
  _config+:: {
    // Where the alerts' dashboard links point (Alertmanager, Slack and pagers open them).
    grafanaUrl: 'http://localhost:3000',
    // Where the alerts' runbook links point: the runbook of this version by default.
    runbookUrlBase: 'https://github.com/training-progress-exporter/training-progress-exporter/blob/v0.1.0/docs',
    // Which scrape job is the exporter (TrainingExporterDown).
    exporterSelector: 'job=~".*training-progress-exporter.*"',
    // Alert name -> its `for:`, for the alerts to debounce longer or shorter.
    alertFor: {},
    // Many clusters under one ruler (Thanos, Mimir): the label that tells them apart, named
    // in every by, on and ignoring clause, every fleet-wide aggregation and every template
    // query (as kubernetes-mixin's clusterLabel). Empty: one cluster, the rules as shipped.
    clusterLabel: '',
  },

  local config = self._config,
  local defaults = {
    grafanaUrl: 'http://localhost:3000',
    runbookUrlBase: 'https://github.com/training-progress-exporter/training-progress-exporter/blob/v0.1.0/docs',
    exporterSelector: 'job=~".*training-progress-exporter.*"',
  },
  // rules.json marks where the cluster goes (alerts/generate.py MARKERS).
  local label = config.clusterLabel,
  local clustered(text) = std.foldl(
    function(t, pair) std.strReplace(t, pair[0], pair[1]),
    [
      ['__cluster_first__', if label == '' then '' else label + ', '],
      ['__cluster_aggregate__', if label == '' then '' else ' by (' + label + ') '],
      ['__cluster_match__', if label == '' then '' else label + '=%q,'],
      ['__cluster_arg__', if label == '' then '' else '$labels.' + label + ' '],
      ['__cluster_prose__', if label == '' then '' else '{{ $labels.' + label + ' }}: '],
      ['__cluster_link__', if label == '' then '' else '&var-cluster={{ $labels.' + label + ' }}'],
    ],
    text
  ),
  local configured(text) =
    clustered(std.strReplace(
      std.strReplace(
        std.strReplace(text, defaults.grafanaUrl, config.grafanaUrl),
        defaults.runbookUrlBase,
        config.runbookUrlBase
      ),
      defaults.exporterSelector,
      config.exporterSelector
    )),
  local alert(rule) =
    rule {
      expr: configured(rule.expr),
      [if std.objectHas(rule, 'for') then 'for']:
        if std.objectHas(config.alertFor, rule.alert) then config.alertFor[rule.alert] else rule['for'],
      annotations: std.mapWithKey(function(_, v) configured(v), rule.annotations),
    },
  local groups(keep) = [
    group { rules: [if keep == 'alert' then alert(r) else r { expr: clustered(r.expr) } for r in group.rules if std.objectHas(r, keep)] }
    for group in source.groups
    if std.length([r for r in group.rules if std.objectHas(r, keep)]) > 0
  ],

  // Many clusters: the dashboards' cluster variable is shown, and reads the label named.
  local clusterDashboard(d) =
    local text = std.strReplace(
      std.strReplace(std.manifestJsonMinified(d), 'cluster=~\\"$cluster\\"', label + '=~\\"$cluster\\"'),
      'label_values(training_run_info, cluster)',
      'label_values(training_run_info, ' + label + ')'
    );
    local parsed = std.parseJson(text);
    parsed { templating+: { list: [if v.name == 'cluster' then v { hide: 0 } else v for v in parsed.templating.list] } },

  prometheusAlerts+:: { groups+: groups('alert') },
  prometheusRules+:: { groups+: groups('record') },
  grafanaDashboards+:: if label == '' then dashboards else std.mapWithKey(function(_, d) clusterDashboard(d), dashboards),
}
