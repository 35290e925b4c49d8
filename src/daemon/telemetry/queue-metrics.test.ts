// The queue gauge: counts read at each scrape, and no series (unknown, not zero) when they cannot be read.
import { describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { parsePrometheusText } from '../../../test/helpers/prometheus.js';
import { registerQueueMetrics } from './queue-metrics.js';

describe('registerQueueMetrics', () => {
  it('reads the counts at each scrape and shows no series when Redis does not answer', async () => {
    const registry = new Registry();
    let answer: Record<string, number> | Error = { wait: 3, prioritized: 0, delayed: 1, active: 2, failed: 0 };
    registerQueueMetrics(registry, () => (answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer)));
    const read = async () =>
      parsePrometheusText(await registry.metrics())
        .filter((s) => s.name === 'converge_queue_jobs')
        .map((s) => `${s.labels.state}=${s.value}`)
        .sort();
    expect(await read()).toEqual(['active=2', 'delayed=1', 'failed=0', 'prioritized=0', 'wait=3']);
    answer = { wait: 0, prioritized: 0, delayed: 0, active: 1, failed: 0 };
    expect(await read()).toEqual(['active=1', 'delayed=0', 'failed=0', 'prioritized=0', 'wait=0']);
    answer = new Error('connection refused');
    expect(await read()).toEqual([]);
  });
});
