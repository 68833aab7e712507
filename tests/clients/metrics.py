"""Parses a metrics text on stdin with the `prometheus_client` package's own
strict parsers; prints its samples as JSON ([name, labels, value] each).
`openmetrics` (the default) reads OpenMetrics, what Prometheus asks for
first; `text` reads the Prometheus text format 0.0.4. A text the parser
refuses makes this exit non-zero with the parser's error."""

import json
import sys

from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families as text_families

parse = text_families if sys.argv[1:] == ["text"] else openmetrics_families
samples = []
for family in parse(sys.stdin.read()):
    for s in family.samples:
        samples.append([s.name, s.labels, s.value])
print(json.dumps(samples))
