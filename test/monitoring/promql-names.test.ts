// The PromQL tokenizer that the rules and dashboard checks use: functions, keywords, matchers and grouping told apart.
import { describe, expect, it } from 'vitest';
import { promqlNames, unknownNames } from '../helpers/promql-names.js';

function names(expression: string): { metrics: Record<string, string[]>; grouping: string[] } {
  const read = promqlNames(expression);
  return {
    metrics: Object.fromEntries([...read.metrics].map(([m, l]) => [m, [...l].sort()])),
    grouping: [...read.grouping].sort(),
  };
}

describe('promqlNames', () => {
  it('tells metrics from functions, aggregations, keywords, numbers and durations', () => {
    expect(
      names(
        'sum by (job, status) (rate(converge_service_requests_total{status=~"5..|429", job="a"}[5m])) / sum without (instance) (rate(x_total[5m])) > 0.05',
      ),
    ).toEqual({
      metrics: { converge_service_requests_total: ['job', 'status'], x_total: [] },
      grouping: ['instance', 'job', 'status'],
    });
    expect(names('histogram_quantile(0.95, sum by (le) (rate(a_bucket{job=~"$job"}[$__rate_interval])))')).toEqual({
      metrics: { a_bucket: ['job'] },
      grouping: ['le'],
    });
    expect(
      names(
        '(time() - max by (job) (last_ts)) > 3 * max by (job) (period) and max(period) > 0 unless on (job) group_left (replica) b offset 5m',
      ),
    ).toEqual({
      metrics: { last_ts: [], period: [], b: [] },
      grouping: ['job', 'replica'],
    });
    expect(names('job:converge_leader:sum == 0 or count(up) == bool 1e3')).toEqual({
      metrics: { 'job:converge_leader:sum': [], up: [] },
      grouping: [],
    });
    // A matcher's value may hold anything, an identifier included; a `{` after a function's `)` is no matcher of it.
    expect(names('m{reason!~"RevisionFailed|sum by (x)", a=\'b\'}')).toEqual({
      metrics: { m: ['a', 'reason'] },
      grouping: [],
    });
  });

  it('refuses what it cannot read, rather than passing it', () => {
    expect(() => promqlNames('rate(m[5m]) > $threshold')).toThrow(/Grafana variable/);
    expect(() => promqlNames('m{a="b"')).toThrow();
    expect(() => promqlNames('m{a}')).toThrow(/operator/);
    expect(() => promqlNames('{__name__="m"}')).toThrow(/without a metric/);
  });
});

describe('unknownNames', () => {
  const known = new Map([
    ['m', new Set(['kind', 'name'])],
    ['h_bucket', new Set(['le', 'endpoint'])],
  ]);
  it('names an unknown metric, a matcher label the metric lacks and a grouping label no metric has', () => {
    expect(unknownNames('max by (job, kind) (m{name="a", instance="x"})', known)).toEqual([]);
    expect(unknownNames('sum by (le, endpoint) (rate(h_bucket[5m]))', known)).toEqual([]);
    expect(unknownNames('max by (kind) (m{reason="x"}) + nope', known)).toEqual([
      'm has no label reason',
      'metric nope is not exported',
    ]);
    expect(unknownNames('sum by (health) (m)', known)).toEqual([
      'no metric of the expression has the label health it groups by',
    ]);
  });
});
