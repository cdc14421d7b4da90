// Everything the mixin renders, as one JSON document (tests/test_mixin.py), with _config
// overrides given on the command line:
//   jsonnet --ext-code config='{}' mixin/render.jsonnet
//   jsonnet --ext-code config='{grafanaUrl: "https://grafana.example.com"}' mixin/render.jsonnet
local mixin = (import 'mixin.libsonnet') + { _config+:: std.extVar('config') };
{
  alerts: mixin.prometheusAlerts,
  rules: mixin.prometheusRules,
  dashboards: mixin.grafanaDashboards,
}
