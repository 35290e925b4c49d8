// Prometheus' own tools over the rules: `promtool check rules` and `promtool test rules` (examples/monitoring/tests),
// and the unit tests' coverage: every alert seen firing and, later in the same test, resolved.
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { alertRules, MONITORING } from '../helpers/monitoring-files.js';

const run = promisify(execFile);
const TESTS = readdirSync(join(MONITORING, 'tests'))
  .filter((f) => f.endsWith('.yaml'))
  .sort();

async function promtoolInstalled(): Promise<boolean> {
  return run('promtool', ['--version']).then(
    () => true,
    () => false,
  );
}
const installed = await promtoolInstalled();
if (!installed)
  console.warn(
    'test/monitoring/promtool.test.ts: promtool is not installed (Debian package prometheus; .ci/run installs it): its checks are skipped',
  );

/** Go's durations as promtool's eval_time writes them (1m, 1h30m, 45s), in seconds. */
function seconds(duration: string): number {
  let total = 0;
  for (const [, value, unit] of duration.matchAll(/(\d+)(h|m|s)/g))
    total += Number(value) * { h: 3600, m: 60, s: 1 }[unit as 'h' | 'm' | 's'];
  return total;
}

interface AlertTest {
  eval_time: string;
  alertname: string;
  exp_alerts?: unknown[];
}

describe('the rules under promtool', () => {
  it.skipIf(!installed)('promtool check rules passes on converge-rules.yaml', async () => {
    const { stdout } = await run('promtool', ['check', 'rules', 'converge-rules.yaml'], { cwd: MONITORING });
    expect(stdout).toMatch(/SUCCESS: \d+ rules found/);
  });

  it.skipIf(!installed)('promtool test rules passes on every file of examples/monitoring/tests', async () => {
    expect(TESTS.length).toBeGreaterThan(0);
    const result = await run('promtool', ['test', 'rules', ...TESTS.map((f) => join('tests', f))], {
      cwd: MONITORING,
    }).catch((error: { stdout?: string; stderr?: string }) => ({
      stdout: `${error.stdout ?? ''}${error.stderr ?? ''}`,
      failed: true,
    }));
    expect(result.stdout).not.toMatch(/FAILED/);
    expect('failed' in result, result.stdout).toBe(false);
    expect(result.stdout.match(/SUCCESS/g)?.length).toBe(TESTS.length);
  });

  it('has a unit test in which each alert fires and then resolves', () => {
    const covered = new Map<string, { fires: boolean; resolves: boolean }>();
    for (const file of TESTS) {
      const doc = parse(readFileSync(join(MONITORING, 'tests', file), 'utf8')) as {
        tests: Array<{ alert_rule_test?: AlertTest[] }>;
      };
      for (const test of doc.tests) {
        const byAlert = new Map<string, AlertTest[]>();
        for (const t of test.alert_rule_test ?? []) byAlert.set(t.alertname, [...(byAlert.get(t.alertname) ?? []), t]);
        for (const [alert, evals] of byAlert) {
          const seen = covered.get(alert) ?? { fires: false, resolves: false };
          const firing = evals.filter((e) => (e.exp_alerts ?? []).length > 0).map((e) => seconds(e.eval_time));
          seen.fires ||= firing.length > 0;
          seen.resolves ||=
            firing.length > 0 &&
            evals.some((e) => (e.exp_alerts ?? []).length === 0 && seconds(e.eval_time) > Math.min(...firing));
          covered.set(alert, seen);
        }
      }
    }
    for (const rule of alertRules())
      expect(covered.get(rule.alert!), rule.alert).toEqual({ fires: true, resolves: true });
  });
});
