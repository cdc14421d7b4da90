#!/usr/bin/env bash
# Installs everything the test suite and benchmarks talk to: Debian's Prometheus (promtool),
# Alertmanager, Pushgateway, wrk, tmux (top in a real terminal), Chromium (the status page in
# a real browser), jsonnet (the monitoring mixin) and mtail (the log benchmark's peer), then
# torch (CPU) and the package with its test and ml extras.
# Idempotent: skips apt when every binary is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for pair in prometheus:prometheus promtool:prometheus prometheus-alertmanager:prometheus-alertmanager \
            prometheus-pushgateway:prometheus-pushgateway wrk:wrk tmux:tmux chromium:chromium \
            jsonnet:jsonnet mtail:mtail; do
  bin=${pair%%:*}; pkg=${pair#*:}
  command -v "$bin" >/dev/null 2>&1 || need+=("$pkg")
done
if ((${#need[@]})); then
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  # shellcheck disable=SC2046
  $SUDO apt-get install -y -q --no-install-recommends $(printf '%s\n' "${need[@]}" | sort -u)
fi

# The ml extra trains real models on CPU; torch comes first, pinned to the CPU build that
# lies on these machines' disk (a range would let pip fetch a CUDA build of several GB).
if ! python3 -c 'import torch' 2>/dev/null; then
  python3 -m pip install -q --disable-pip-version-check --find-links /opt/wheels torch==2.13.0
fi
# The reporter is its own distribution in reporter/; installed in the same call so that the
# exporter's dependency on it resolves here, never from an index.
python3 -m pip install -q --disable-pip-version-check -e ./reporter -e '.[test,ml,katib]'
