// OpenTelemetry traces of a daemon (`converge run` as a child process, OTEL_EXPORTER_OTLP_ENDPOINT set) received by a loopback OTLP/HTTP collector: the reconcile's root span and its step children, each job's span linked to it with the job's requests as children; never the API key, a secret or a query. And its /metrics: the step histogram adds up to the reconcile duration.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rm } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { parsePrometheusText } from '../helpers/prometheus.js';
import {
  dockerDeploymentYaml,
  dropPrefix,
  killAllConverge,
  startDaemon,
  tempDir,
  testPrefix,
  until,
  writeFiles,
} from './helpers.js';

const API_KEY = 'trace-test-api-key-5f1c9e';
const SECRET = 'trace-test-secret-value-8a2d4b';

/** An OTLP span as the JSON protocol carries it (ids in hex). */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  attributes?: Array<{ key: string; value: Record<string, unknown> }>;
  links?: Array<{ traceId: string; spanId: string }>;
}

/** A loopback OTLP/HTTP collector: POST /v1/traces (JSON), every span and every raw body kept. */
async function startCollector(): Promise<{ url: string; spans: OtlpSpan[]; bodies: string[]; close(): Promise<void> }> {
  const spans: OtlpSpan[] = [];
  const bodies: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      const raw = Buffer.concat(chunks);
      const text = (req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8');
      bodies.push(text);
      const request = JSON.parse(text) as { resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: OtlpSpan[] }> }> };
      for (const rs of request.resourceSpans ?? [])
        for (const ss of rs.scopeSpans ?? []) spans.push(...(ss.spans ?? []));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    bodies,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A span attribute's value (string, int or double), or undefined. */
function attr(span: OtlpSpan, key: string): unknown {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  if (!value) return undefined;
  if ('intValue' in value) return Number(value.intValue);
  return value.stringValue ?? value.doubleValue ?? value.boolValue;
}

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  await killAllConverge();
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe('traces of a daemon reconcile and its jobs', () => {
  it('the reconcile span has its steps as children; each job span links to it and has its requests as children', async () => {
    const collector = await startCollector();
    const emulator: RunningEmulator = await startEmulator({ buildMs: 0, apiKey: API_KEY });
    const dir = await tempDir('traces');
    const prefix = testPrefix('traces');
    cleanups.push(
      () => collector.close(),
      () => emulator.close(),
      () => dropPrefix(prefix),
      () => rm(dir, { recursive: true, force: true }),
    );
    await writeFiles(dir, {
      'web.yaml': dockerDeploymentYaml('web', { maxScale: 2, secrets: [['API_TOKEN', 'TRACE_TEST_SECRET']] }),
      'worker.yaml': dockerDeploymentYaml('worker', { maxScale: 1 }),
    });
    const daemon = await startDaemon(dir, ['--api-url', emulator.url, '--redis-prefix', prefix, '--resync', '1h'], {
      CONVERGE_API_KEY: API_KEY,
      TRACE_TEST_SECRET: SECRET,
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });

    // Both deployments created by their jobs, and every job span exported with its requests.
    const jobs = await until(
      'two job spans, each with its requests, exported',
      () => {
        const found = collector.spans.filter((s) => s.name.startsWith('job '));
        const complete = found.filter((job) =>
          collector.spans.some((s) => s.parentSpanId === job.spanId && attr(s, 'http.request.method') !== undefined),
        );
        return complete.length >= 2 ? complete : undefined;
      },
      60_000,
      50,
    );
    await until(
      'the reconcile span exported',
      () =>
        collector.spans.some((s) => s.name === 'reconcile' && s.spanId === jobs[0]!.links?.[0]?.spanId) || undefined,
      30_000,
      50,
    );

    for (const job of jobs) {
      // Its own trace, with no parent, linked to the reconcile that enqueued it.
      expect(job.parentSpanId ?? '').toBe('');
      expect(job.links).toHaveLength(1);
      const link = job.links![0]!;
      const reconcile = collector.spans.find((s) => s.name === 'reconcile' && s.spanId === link.spanId)!;
      expect(reconcile.traceId).toBe(link.traceId);
      expect(job.traceId).not.toBe(reconcile.traceId);
      expect(reconcile.parentSpanId ?? '').toBe('');
      expect(attr(reconcile, 'converge.reconcile.trigger')).toBe('startup');
      expect(attr(job, 'converge.job.operation')).toBe('create-deployment');

      // The reconcile's steps, each a child of its span, in its trace.
      const steps = collector.spans.filter(
        (s) => s.parentSpanId === reconcile.spanId && attr(s, 'converge.reconcile.step') !== undefined,
      );
      expect(new Set(steps.map((s) => s.name))).toEqual(
        new Set(['manifests', 'listing', 'revisions', 'decision', 'enqueue', 'state']),
      );
      for (const step of steps) expect(step.traceId).toBe(reconcile.traceId);
      // The reconcile's own requests (the listing) are in its trace too.
      expect(
        collector.spans.some((s) => s.traceId === reconcile.traceId && attr(s, 'url.template') === '/v2/deployments'),
      ).toBe(true);

      // The job's requests: children of its span, named by method and route template, with the status.
      const requests = collector.spans.filter((s) => s.parentSpanId === job.spanId);
      expect(requests.length).toBeGreaterThan(0);
      for (const request of requests) {
        expect(request.traceId).toBe(job.traceId);
        expect(request.kind).toBe(3); // SPAN_KIND_CLIENT
        expect(request.name).toBe(
          `${attr(request, 'http.request.method') as string} ${attr(request, 'url.template') as string}`,
        );
        expect(attr(request, 'url.template')).toMatch(/^\/v2\/[a-z_/{}]+$/);
        expect(typeof attr(request, 'http.response.status_code')).toBe('number');
      }
      expect(
        requests.some((r) => attr(r, 'http.request.method') === 'POST' && attr(r, 'http.response.status_code') === 201),
      ).toBe(true);
    }

    // Never the API key, a secret value or a query string in what was exported.
    const exported = collector.bodies.join('\n');
    expect(exported).not.toContain(API_KEY);
    expect(exported).not.toContain(SECRET);
    expect(exported).not.toMatch(/name_contains|deployment_ids|\?/);

    // The daemon's /metrics: each step observed, and their sum within 10% of the reconciles' duration.
    const samples = parsePrometheusText(await daemon.metrics());
    const stepSums = samples.filter((s) => s.name === 'converge_reconcile_step_seconds_sum');
    expect(new Set(stepSums.map((s) => s.labels.step))).toEqual(
      new Set(['manifests', 'listing', 'revisions', 'decision', 'enqueue', 'state']),
    );
    const steps = stepSums.reduce((sum, s) => sum + s.value, 0);
    const reconciles = samples
      .filter((s) => s.name === 'converge_reconcile_duration_seconds_sum')
      .reduce((sum, s) => sum + s.value, 0);
    expect(steps).toBeLessThanOrEqual(reconciles);
    expect(steps).toBeGreaterThanOrEqual(reconciles * 0.9);
    await daemon.kill('SIGTERM');
  }, 120_000);
});
