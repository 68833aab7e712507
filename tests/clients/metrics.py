"""Parses an OpenMetrics text (what Prometheus scrapes) on stdin with the
`prometheus_client` package's own strict parser; prints its samples as JSON
([name, labels, value] each). A text the parser refuses makes this exit
non-zero with the parser's error."""

import json
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families

samples = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        samples.append([s.name, s.labels, s.value])
print(json.dumps(samples))
