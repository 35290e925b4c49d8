// An unchanged /status poll over the real Redis and loopback HTTP: while the projection's version stands, a poll reads
// no state from Redis and serializes no row and no plan (counted, not timed); once it moves, the rows are read again.
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Plan } from '../../src/core/model.js';
import type { ResourceState } from '../../src/core/resource-state-model.js';
import { decodeStatus, ROW_OMITTED } from '../../src/core/status-compact.js';
import { ReconcilesRecord } from '../../src/daemon/reconcile/reconciles-record.js';
import { statusDocument, type StatusParts } from '../../src/daemon/server/daemon-status.js';
import { startStatusServer, type StatusServer } from '../../src/daemon/server/status-server.js';
import { ProjectionReader } from '../../src/daemon/status/projection.js';
import { fenceKey, leaseKey } from '../../src/leader/lease.js';
import { ReconcileRecordStore } from '../../src/store/reconcile-record.js';
import { ResourceFolds } from '../../src/store/resource-folds.js';
import { eventLogStoreOnTestPrefix, seedStates } from '../helpers/event-log-store.js';

const log = pino({ level: 'silent' });
const N = 200;

function state(i: number): ResourceState {
  const name = `app-${String(i).padStart(3, '0')}`;
  return {
    key: `Deployment/${name}`,
    kind: 'Deployment',
    name,
    file: `teams/${name}.yaml`,
    action: 'noop',
    sync: { status: 'synced', reason: 'Synced', message: 'live state matches the manifest' },
    health: {
      status: 'healthy',
      reason: 'RevisionDeployed',
      message: `revision r-${i} is active`,
      revisionId: `r-${i}`,
    },
    reason: null,
    error: null,
    drift: null,
    heldAtLastGood: false,
    job: null,
    deploymentId: `d-${i}`,
  };
}

const plan: Plan = {
  format_version: '1',
  summary: { create: 0, update: 0, adopt: 0, delete: 0, noop: N, orphan: 0, blocked: 0, suspended: 0 },
  changes: Array.from({ length: N }, (_, i) => ({
    kind: 'Deployment' as const,
    name: state(i).name,
    action: 'noop' as const,
    new_revision: false,
    fields: [],
    reason: null,
  })),
  diagnostics: [],
};

const isRow = (value: unknown): boolean =>
  typeof value === 'object' && value !== null && String((value as { key?: unknown }).key).startsWith('Deployment/');
const holdsRows = (value: unknown): boolean => isRow(value) || (Array.isArray(value) && value.some(isRow));

describe('an unchanged /status poll', () => {
  const fixture = eventLogStoreOnTestPrefix('status-unchanged');
  let server: StatusServer | undefined;
  let stateReads = 0;
  const stringify = vi.spyOn(JSON, 'stringify');
  /** How many JSON texts of rows, and of the plan, were made since the last reset. */
  const rowTexts = (): number => stringify.mock.calls.filter(([value]) => holdsRows(value)).length;
  const planTexts = (): number =>
    stringify.mock.calls.filter(([value]) => value === plan || (value as { plan?: unknown } | undefined)?.plan === plan)
      .length;

  beforeAll(async () => {
    await seedStates(
      fixture.redis(),
      fixture.prefix,
      Array.from({ length: N }, (_, i) => state(i)),
    );
    const records = new ReconcileRecordStore(fixture.redis(), fixture.prefix, fenceKey(fixture.prefix));
    const record = {
      by: 'replica-a',
      history: [],
      lastSuccessfulReconcileAt: null,
      orphans: [],
      reconciles: { total: 1, failed: 0, byTrigger: { startup: 1 } },
      manifests: { loaded: true, everLoaded: true, error: null },
    };
    expect(await records.write({ record, plan, fence: undefined })).toBe(true);
    // The daemon's reader of the states (the folds' copy, read again where a version moved), each read counted.
    const folds = new ResourceFolds(fixture.redis(), fixture.prefix, leaseKey(fixture.prefix));
    const counted = {
      states: () => ((stateReads += 1), folds.states()),
      stateVersion: () => folds.stateVersion(),
    };
    const projection = new ProjectionReader(counted, {
      written: async () => undefined,
      order: () => [],
      fallback: () => [],
      onError: (error) => {
        throw error;
      },
    });
    const local = (): never => {
      throw new Error('the record is in Redis');
    };
    const reconciles = new ReconcilesRecord(records, { by: 'replica-a', log, local });
    const parts: StatusParts = {
      dir: 'manifests',
      startedAt: '2026-01-01T00:00:00.000Z',
      stopping: false,
      serviceUrl: undefined,
      embedded: false,
      reconcileEndpoint: false,
      settings: { driftPolicy: 'report', resync: 300_000, debounce: 300, prune: false },
      lease: null,
      appliedState: { lost: false, lostAt: null, losses: 0, detail: null },
      cycles: [],
      reconciler: {
        reconcilesView: () => reconciles.view(),
        resourceStates: () => projection.rows(),
        stateRebuilding: () => false,
        failedBuildLogs: async () => ({}),
      },
    };
    server = await startStatusServer({
      host: '127.0.0.1',
      port: 0,
      handlers: { readiness: async () => [], metrics: async () => '', status: () => statusDocument(parts) },
    });
  });
  afterAll(async () => {
    await server?.close();
    stringify.mockRestore();
  });
  afterEach(() => {
    stringify.mockClear();
    stateReads = 0;
  });

  const get = (path: string, etag?: string): Promise<Response> =>
    fetch(`${server!.url}${path}`, { headers: etag ? { 'if-none-match': etag } : {} });

  it('answers 304 from what was built last: no state read from Redis, no row and no plan serialized', async () => {
    const first = await get('/status');
    expect(first.status).toBe(200);
    const whole = (await first.json()) as { resources: Array<Record<string, unknown>>; plan: Plan };
    expect(whole.resources).toHaveLength(N);
    expect(whole.plan).toEqual(plan);
    expect(stateReads).toBe(1);
    expect(rowTexts()).toBeGreaterThan(0);
    stringify.mockClear();
    stateReads = 0;

    const again = await get('/status', first.headers.get('etag')!);
    expect(again.status).toBe(304);
    expect({ stateReads, rowTexts: rowTexts(), planTexts: planTexts() }).toEqual({
      stateReads: 0,
      rowTexts: 0,
      planTexts: 0,
    });

    // The page's poll: its first answer is the whole document (format 2); then a delta, 304 while nothing moves.
    const full = await get('/status?format=2&plan=delta&keys=delta&since=');
    const fullDoc = (await full.json()) as Record<string, unknown> & { view: { sequence: string; delta: boolean } };
    const { view, ...decoded } = decodeStatus(fullDoc);
    const lessOmitted = whole.resources.map((row) =>
      Object.fromEntries(Object.entries(row).filter(([field]) => !ROW_OMITTED.includes(field))),
    );
    expect(view.delta).toBe(false);
    expect(decoded).toEqual({ ...whole, format_version: '2', resources: lessOmitted });
    const token = view.sequence;
    stringify.mockClear();
    // Asked again (another page opened), after a first window: the whole answer's encoding and its text were kept.
    expect((await get('/status?format=2&first=150')).status).toBe(200);
    stringify.mockClear();
    expect((await get('/status?format=2&plan=delta&keys=delta&since=')).status).toBe(200);
    expect(rowTexts()).toBe(0);
    const asked = `/status?format=2&plan=delta&keys=delta&since=${encodeURIComponent(token)}`;
    const delta = await get(asked);
    expect(((await delta.json()) as { resources: unknown[] }).resources).toEqual([]);
    const unchanged = await get(asked, delta.headers.get('etag')!);
    expect(unchanged.status).toBe(304);
    expect({ stateReads, rowTexts: rowTexts(), planTexts: planTexts() }).toEqual({
      stateReads: 0,
      rowTexts: 0,
      planTexts: 0,
    });
  });

  it('reads and compares the rows again once the version moved, and answers the row that changed', async () => {
    const full = await get('/status?format=2&plan=delta&keys=delta&since=');
    const token = ((await full.json()) as { view: { sequence: string } }).view.sequence;
    await seedStates(fixture.redis(), fixture.prefix, [state(N)]);
    stringify.mockClear();
    stateReads = 0;
    const delta = await get(`/status?format=2&plan=delta&keys=delta&since=${encodeURIComponent(token)}`);
    expect(((await delta.json()) as { resources: Array<{ key: string }> }).resources.map((row) => row.key)).toEqual([
      state(N).key,
    ]);
    expect(stateReads).toBe(1);
    expect(rowTexts()).toBeGreaterThan(0);
    expect(planTexts()).toBe(0);
  });
});
