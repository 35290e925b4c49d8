// Writes examples/monitoring/prometheusrule.yaml (the Prometheus Operator's PrometheusRule) from the one source of the
// rules, examples/monitoring/converge-rules.yaml: its groups, comments included, under `spec:` (docs/monitoring.md).
// `node scripts/prometheusrule.mjs` writes it; test/monitoring/rules-files.test.ts checks the two carry equal groups.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const DIR = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'examples/monitoring');
const source = readFileSync(join(DIR, 'converge-rules.yaml'), 'utf8');
const start = source.search(/^groups:/m);
if (start < 0) throw new Error('examples/monitoring/converge-rules.yaml has no top-level groups:');
const groups = source
  .slice(start)
  .split('\n')
  .map((line) => (line === '' ? line : `  ${line}`))
  .join('\n');
const header = `# GENERATED from examples/monitoring/converge-rules.yaml by \`node scripts/prometheusrule.mjs\`: edit that file, then run it.
# The Prometheus Operator's form of converge's rules (docs/monitoring.md#prometheus-operator). \`release: prometheus\` is
# what kube-prometheus-stack's Prometheus selects rules by when its Helm release is named prometheus (ruleSelector);
# set the labels your Prometheus selects.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: converge
  labels:
    app.kubernetes.io/name: converge
    release: prometheus
spec:
`;
writeFileSync(join(DIR, 'prometheusrule.yaml'), header + groups);
