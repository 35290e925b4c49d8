// Fault soak: the daemon converges 300 deployments and 20 providers through 503s, 429s, dropped connections and jitter,
// and the emulator's request log shows every needed write landed exactly once and nothing else was written.
import { rm } from 'node:fs/promises';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startEmulator,
  type EmulatorSeed,
  type RequestLogEntry,
  type RunningEmulator,
} from '../../src/emulator/server.js';
import {
  dockerDeploymentYaml,
  dropPrefix,
  killAllConverge,
  liveMaxScale,
  providerYaml,
  REDIS_URL,
  startDaemon,
  tempDir,
  testPrefix,
  until,
  writeFiles,
  type DaemonHandle,
} from './helpers.js';
import { prng } from '../helpers/prng.js';
import { QUEUE_NAME } from '../../src/jobs/queue/jobs.js';

const NEW = Array.from({ length: 150 }, (_, i) => `soak-new-${i}`);
const CHANGED = Array.from({ length: 100 }, (_, i) => `soak-changed-${i}`);
const UNCHANGED = Array.from({ length: 50 }, (_, i) => `soak-same-${i}`);
const PROVIDERS = Array.from({ length: 20 }, (_, i) => `soak-provider-${i}`);
const SOAK_SEEDS = { jitter: 300, reset: 301, fail: 302, rateLimit: 303, lost: 304 } as const;
const ENV = { SOAK_TOKEN: 'soak-token-value-5d1c', SOAK_CLIENT_SECRET: 'soak-client-secret-88e2' };

/** New ones: a third carry a secret. Changed ones: max_scale 1 -> 3, every fourth also gains a secret. */
function manifests(): Record<string, string> {
  const files: Record<string, string> = {};
  NEW.forEach((name, i) => {
    files[`new/${name}.yaml`] = dockerDeploymentYaml(name, {
      maxScale: 2,
      secrets: i % 3 === 0 ? [['TOKEN', 'SOAK_TOKEN']] : [],
    });
  });
  CHANGED.forEach((name, i) => {
    files[`changed/${name}.yaml`] = dockerDeploymentYaml(name, {
      maxScale: 3,
      secrets: i % 4 === 0 ? [['TOKEN', 'SOAK_TOKEN']] : [],
    });
  });
  for (const name of UNCHANGED) files[`same/${name}.yaml`] = dockerDeploymentYaml(name, { maxScale: 2 });
  // all providers in one multi-document file
  files['providers.yaml'] = PROVIDERS.map((p) => providerYaml(p, 'SOAK_CLIENT_SECRET')).join('---\n');
  return files;
}

const SEED: EmulatorSeed = {
  deployments: [
    ...CHANGED.map((name) => ({
      name,
      source: 'external_docker' as const,
      source_config: { resource_spec: { max_scale: 1 } },
      source_revision_config: { image_uri: `docker.io/acme/${name}:1` },
    })),
    ...UNCHANGED.map((name) => ({
      name,
      source: 'external_docker' as const,
      source_config: { resource_spec: { max_scale: 2 } },
      source_revision_config: { image_uri: `docker.io/acme/${name}:1` },
    })),
  ],
};

/**
 * A write that landed: handled with a 2xx, whether the answer reached converge or was lost on the way back
 * (a 'fault-lost' entry keeps the status the handler gave: a lost 409 did not land).
 */
function landed(log: readonly RequestLogEntry[]): RequestLogEntry[] {
  return log.filter((e) => e.method !== 'GET' && e.status >= 200 && e.status < 300);
}

function countBy<T>(items: readonly T[], key: (item: T) => string | undefined): Map<string, number> {
  const out = new Map<string, number>();
  for (const item of items) {
    const k = key(item);
    if (k !== undefined) out.set(k, (out.get(k) ?? 0) + 1);
  }
  return out;
}

/** Where BullMQ holds the jobs of `rows` (their state, attempts, delay), and whether the queue is paused or rate limited. */
async function queueReport(rows: ReadonlyArray<{ job?: { id: string } | null }>, prefix: string): Promise<string> {
  const queue = new Queue(QUEUE_NAME, { connection: { url: REDIS_URL }, prefix });
  try {
    const jobs = await Promise.all(
      rows
        .flatMap((r) => (r.job ? [r.job.id] : []))
        .slice(0, 5)
        .map(async (id) => {
          const job = await queue.getJob(id);
          return {
            id,
            state: job ? await job.getState() : 'missing',
            attemptsMade: job?.attemptsMade,
            attemptsStarted: job?.attemptsStarted,
            delay: job?.delay,
            processedOn: job?.processedOn,
            failedReason: job?.failedReason,
          };
        }),
    );
    return `jobs: ${JSON.stringify(jobs)}\nqueue: ${JSON.stringify({ paused: await queue.isPaused(), rateLimitTtl: await queue.getRateLimitTtl(), counts: await queue.getJobCounts() })}`;
  } finally {
    await queue.close();
  }
}

describe('fault soak: 300 deployments and 20 providers through 20% 503, 10% 429 (Retry-After 0: the least pause, 50 ms), 5% dropped connections', () => {
  let emulator: RunningEmulator;
  let daemon: DaemonHandle;
  let dir: string;
  const prefix = testPrefix('soak');

  beforeAll(async () => {
    emulator = await startEmulator({
      seed: SEED,
      buildMs: 0,
      failRate: 0.2,
      rateLimitRate: 0.1,
      // dropped connections: 5% before the request is handled, and 5% after (the write landed, the answer is lost)
      resetRate: 0.05,
      lostResponseRate: 0.05,
      // Each 429 pauses the whole queue for its Retry-After (docs/queue-and-retries.md): at 1 s, about 80 pauses took
      // some 20 s of a 70 s run (72 s against 50 s, on 2 busy cores); the soak is about faults, not waiting them out.
      retryAfterSeconds: 0,
      latencyMs: 2,
      jitterMs: 20,
      // One seeded stream per knob: each one's 4th fault comes by its 148th draw at the latest, and the run
      // sends more than 270 writes, so every run meets every kind more than 3 times, whatever the interleaving.
      randomFor: (site) => prng(SOAK_SEEDS[site]),
    });
    dir = await tempDir('soak');
    await writeFiles(dir, manifests());
  }, 120_000);

  afterAll(async () => {
    await killAllConverge();
    await emulator?.close();
    await dropPrefix(prefix);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('converges everything; each needed write lands exactly once; no needless write or revision', async () => {
    const started = Date.now();
    // --max-backoff 1s: with 30 attempts, a job that meets 14 failures in a row would otherwise wait up to minutes for
    // its next try (docs/queue-and-retries.md); the soak is about each write landing once, not about that wait.
    daemon = await startDaemon(
      dir,
      [
        '--api-url',
        emulator.url,
        '--redis-prefix',
        prefix,
        '--concurrency',
        '20',
        '--attempts',
        '30',
        '--backoff',
        '50ms',
        '--max-backoff',
        '1s',
        '--resync',
        '2s',
        '--log-level',
        'warn',
      ],
      ENV,
    );

    const byName = () => new Map(emulator.store.allDeployments().map((d) => [d.name, d]));
    /** The names not yet matching their manifests. */
    const unconverged = (): string[] => {
      const live = byName();
      const deployments = [...NEW, ...CHANGED, ...UNCHANGED].filter((name) => {
        const d = live.get(name);
        return !d || liveMaxScale(d) !== (CHANGED.includes(name) ? 3 : 2);
      });
      const providers = new Set(emulator.store.providers().map((p) => p.provider_id));
      return [...deployments, ...PROVIDERS.filter((p) => !providers.has(p))];
    };
    try {
      // A cap, not a speed target: with one retry layer (docs/queue-and-retries.md) a failed read costs its job an
      // attempt and a backoff, and each 429 pauses the queue (50 ms here).
      await until(
        'every deployment and provider to match its manifest',
        () => unconverged().length === 0,
        240_000,
        250,
      );
    } catch (error) {
      // What was left, and what the daemon says of it, so a slow run can be read rather than guessed at.
      const left = unconverged();
      const rows = (await daemon.status().catch(() => ({ resources: [] }))).resources.filter((r) =>
        left.includes(r.name),
      );
      throw new Error(
        `${String(error)}\n${left.length} not converged: ${left.slice(0, 20).join(', ')}\nstatus rows: ${JSON.stringify(rows.slice(0, 10))}\n${await queueReport(rows, prefix)}\nstderr: ${daemon.stderr().slice(-4000)}`,
        { cause: error },
      );
    }
    const convergedMs = Date.now() - started;

    // The daemon's own view agrees once a reconcile after the last job has run: every resource synced.
    await until(
      '/status to show every resource synced',
      async () => {
        const status = await daemon.status();
        return (
          status.resources.length === NEW.length + CHANGED.length + UNCHANGED.length + PROVIDERS.length &&
          status.resources.every((r) => r.state === 'synced')
        );
      },
      30_000,
      250,
    ).catch(async (error: unknown) => {
      // Which rows are not synced, and the last reconciles, so a slow run can be read rather than guessed at.
      const status = await daemon.status().catch(() => ({ resources: [], reconciles: undefined }));
      const rows = status.resources.filter((r) => r.state !== 'synced');
      throw new Error(
        `${String(error)}\n${rows.length} of ${status.resources.length} rows not synced: ${JSON.stringify(rows.slice(0, 5))}\nreconciles: ${JSON.stringify(status.reconciles)}\n${await queueReport(rows, prefix)}\nstderr: ${daemon.stderr().slice(-4000)}`,
        { cause: error },
      );
    });

    // Steady state under the same faults: two more resync cycles send no write at all.
    const quietFrom = emulator.requestLog.length;
    const reconcilesBefore = (await daemon.status()).reconciles?.total ?? 0;
    await until(
      'two more reconciles',
      async () => ((await daemon.status()).reconciles?.total ?? 0) >= reconcilesBefore + 2,
      20_000,
      250,
    );
    const late = emulator.requestLog.slice(quietFrom).filter((e) => e.method !== 'GET');
    expect(late).toEqual([]);

    const log = emulator.requestLog;
    // the run met every kind of fault, many times
    const faults = countBy(log, (e) => (e.outcome.startsWith('fault-') ? e.outcome : undefined));
    for (const kind of ['fault-503', 'fault-429', 'fault-reset', 'fault-lost'])
      expect(faults.get(kind) ?? 0, kind).toBeGreaterThan(3);

    const writes = landed(log);
    const live = byName();
    const nameOfId = new Map([...live.values()].map((d) => [d.id, d.name]));
    const creates = countBy(
      writes.filter((e) => e.route === '/v2/deployments'),
      (e) => (e.body as { name?: string } | undefined)?.name,
    );
    const patches = writes.filter((e) => e.route === '/v2/deployments/{deployment_id}');
    const patchesByName = countBy(patches, (e) => nameOfId.get(e.deploymentId ?? ''));
    const revisionsByName = countBy(
      patches.filter((e) => e.newRevision),
      (e) => nameOfId.get(e.deploymentId ?? ''),
    );
    const providerCreates = countBy(
      writes.filter((e) => e.route === '/v2/auth/providers'),
      (e) => (e.body as { provider_id?: string } | undefined)?.provider_id,
    );

    // exactly one create per new deployment, none for any other name
    expect([...creates.entries()].filter(([, n]) => n !== 1)).toEqual([]);
    expect([...creates.keys()].sort()).toEqual([...NEW].sort());
    // exactly one PATCH per changed deployment, and it started exactly one revision; new and unchanged ones: none
    expect([...patchesByName.entries()].filter(([, n]) => n !== 1)).toEqual([]);
    expect([...patchesByName.keys()].sort()).toEqual([...CHANGED].sort());
    expect([...revisionsByName.keys()].sort()).toEqual([...CHANGED].sort());
    expect(patches.filter((e) => !nameOfId.has(e.deploymentId ?? ''))).toEqual([]);
    // exactly one create per provider
    expect([...providerCreates.entries()].filter(([, n]) => n !== 1)).toEqual([]);
    expect([...providerCreates.keys()].sort()).toEqual([...PROVIDERS].sort());
    expect(writes.filter((e) => e.route === '/v2/auth/providers/mcp-discover')).toEqual([]);

    // each revision of a changed deployment is the one the PATCH made (seeded with one), each new one has one
    for (const name of CHANGED) expect(live.get(name)!.revisions.length, name).toBe(2);
    for (const name of NEW) expect(live.get(name)!.revisions.length, name).toBe(1);
    // secrets reached the deployments that declare them
    NEW.forEach((name, i) =>
      expect(
        live.get(name)!.secrets.map((s) => s.name),
        name,
      ).toEqual(i % 3 === 0 ? ['TOKEN'] : []),
    );
    CHANGED.forEach((name, i) =>
      expect(
        live.get(name)!.secrets.map((s) => s.name),
        name,
      ).toEqual(i % 4 === 0 ? ['TOKEN'] : []),
    );

    expect(daemon.alive()).toBe(true);
    // nothing on stderr: no warning, no stack
    expect(daemon.stderr(), daemon.stderr()).toBe('');
    console.log(
      `fault soak: converged in ${convergedMs} ms; ${log.length} requests, faults ${JSON.stringify(Object.fromEntries(faults))}`,
    );
  }, 300_000);
});
