// A write whose answer was lost with its leader: the service took the leader's PATCHes, the leader was killed -9 before
// their answers came back (a proxy held them), and the new leader records each once from what the service reports,
// with no stale pending write and `/status` naming the input the service runs, sending nothing but reads.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { QUEUE_NAME } from '../../src/jobs/queue/jobs.js';
import { pendingKey } from '../../src/store/applied-state.js';
import { heldProxy } from '../helpers/held-proxy.js';
import { rawRedis, REDIS_URL } from '../helpers/redis.js';
import { atomicSave } from './daemon-helpers.js';
import {
  dockerDeploymentYaml,
  killAllConverge,
  liveMaxScale,
  spawnConverge,
  tempDir,
  until,
  writeFiles,
  type DaemonHandle,
} from './helpers.js';
import { atEnd, daemonOf, prefixOf } from './scoped.js';

afterAll(async () => {
  await killAllConverge();
});

/** The two resources: one edit starts a revision (a new image), the other does not (max_scale only). */
const IMAGE = 'Deployment/lost-image';
const SCALE = 'Deployment/lost-scale';

interface Entry {
  at: string;
  type: string;
  reason: string;
  message: string;
  job: { id: string } | null;
}

interface Row {
  key: string;
  job: { id: string; state: string } | null;
  appliedFrom?: { kind: string; id: string };
  sync?: { status: string };
}

async function history(daemon: DaemonHandle, key: string): Promise<Entry[]> {
  return ((await (await fetch(`${daemon.url}/history/${key}`)).json()) as { events: Entry[] }).events;
}

async function rows(daemon: DaemonHandle): Promise<Row[]> {
  return (await daemon.status()).resources;
}

async function manifestVersion(daemon: DaemonHandle): Promise<string | undefined> {
  return ((await daemon.status()).manifestVersion as { id: string } | null)?.id;
}

function nonGets(e: RunningEmulator): string[] {
  return e.requestLog.filter((r) => r.method !== 'GET').map((r) => `${r.method} ${r.path} ${r.status}`);
}

/** A failed wait, explained: the new leader's last log lines. */
function explained(daemon: DaemonHandle) {
  return (error: Error): never => {
    const tail = daemon.lines.slice(-30).map((l) => JSON.stringify(l).slice(0, 400));
    throw new Error(`${error.message}\nnew leader's log (last lines):\n${tail.join('\n')}`);
  };
}

describe('a write whose answer was lost with its leader', () => {
  it('the new leader records it once from what the service reports; /status names its input', async (t) => {
    const e = await startEmulator({ buildMs: 0 });
    atEnd(t, () => e.close());
    const proxy = await heldProxy(e.url);
    atEnd(t, () => proxy.close());
    const redis = rawRedis();
    atEnd(t, () => redis.quit());
    const dir = await tempDir('lost-answer');
    atEnd(t, () => rm(dir, { recursive: true, force: true }));
    await writeFiles(dir, {
      'image.yaml': dockerDeploymentYaml('lost-image', { maxScale: 2 }),
      'scale.yaml': dockerDeploymentYaml('lost-scale', { maxScale: 2 }),
    });
    const p = prefixOf(t, 'lost-answer');
    // --lease 2s, --job-lock 20s: the standby leads once the killed leader's key expired (2 s), well before its worker
    // takes the killed leader's jobs back (their locks lapse within 20 s), so it takes them as a former leader's: the
    // test checks that order rather than trusting it. --resync 1h: nothing after the kill comes from a timer.
    const common = ['--redis-prefix', p, '--lease', '2s', '--job-lock', '20s', '--resync', '1h'];
    common.push('--debounce', '50ms', '--backoff', '50ms', '--log-level', 'info');
    // Both reach the service through the proxy (a prefix is claimed for one service URL); the leader waits for an
    // answer as long as it lives.
    const leader = await daemonOf(t, dir, ['--api-url', proxy.url, '--request-timeout', '10m', ...common]);
    await until(
      'both created and synced on the leader',
      async () => {
        const now = await rows(leader);
        return now.length === 2 && now.every((r) => r.sync?.status === 'synced' && r.job?.state === 'completed');
      },
      60_000,
      100,
    );
    const before = await manifestVersion(leader);

    // The edits: the service takes both PATCHes; their answers never reach the leader.
    proxy.holdAnswersOf((method) => method === 'PATCH');
    await atomicSave(
      join(dir, 'image.yaml'),
      dockerDeploymentYaml('lost-image', { maxScale: 2, image: 'docker.io/acme/lost-image:2' }),
    );
    await atomicSave(join(dir, 'scale.yaml'), dockerDeploymentYaml('lost-scale', { maxScale: 3 }));
    await until(
      'both PATCHes taken by the service, their answers held',
      () => proxy.answersHeld().filter((a) => a.endsWith(' 200')).length === 2,
      60_000,
      20,
    );
    const live = new Map(e.store.allDeployments().map((d) => [d.name, d]));
    expect(live.get('lost-image')?.source_revision_config.image_uri).toBe('docker.io/acme/lost-image:2');
    expect(liveMaxScale(live.get('lost-scale'))).toBe(3);
    const edited = await until(
      "the leader's reconcile of the edit recorded",
      async () => {
        const id = await manifestVersion(leader);
        return id !== undefined && id !== before ? id : undefined;
      },
      30_000,
      50,
    );
    expect(await redis.hlen(pendingKey(p))).toBe(2);

    // The standby starts while the leader still waits for the answers (so no job of the edit ran on it), then the
    // leader is killed before they come back.
    const standby = await daemonOf(t, dir, ['--api-url', proxy.url, ...common]);
    const lease = async () =>
      (await standby.status()).lease as { leading: boolean; leader: { holder: string } | null } | null;
    await until("the standby to see the leader's lease", async () => (await lease())?.leader != null, 30_000, 50);
    expect((await lease())?.leading).toBe(false);
    const writesAtKill = nonGets(e);
    await leader.kill('SIGKILL');
    proxy.release();

    await until('the standby to lead', async () => (await lease())?.leading === true, 30_000, 50).catch(
      explained(standby),
    );
    const queue = new Queue(QUEUE_NAME, { connection: { url: REDIS_URL }, prefix: p });
    atEnd(t, () => queue.close());
    // The killed leader's two jobs are still active under its lapsing locks: the standby's worker takes them only now.
    expect((await queue.getJobCounts('active')).active).toBe(2);
    await until(
      'both lost writes settled: no pending write left',
      async () => (await redis.hlen(pendingKey(p))) === 0,
      120_000,
      100,
    ).catch(explained(standby));
    await until(
      "/status names the edit's manifests for both",
      async () => {
        const now = await rows(standby);
        return now.length === 2 && now.every((r) => r.appliedFrom?.id === edited && r.job?.state === 'completed');
      },
      30_000,
      100,
    ).catch(explained(standby));

    // Each write the service took is recorded once, by the job that sent it, as a write (not "sent nothing").
    for (const key of [IMAGE, SCALE]) {
      const done = (await history(standby, key)).filter((x) => x.type === 'write_done');
      const jobIds = done.map((x) => x.job?.id);
      expect(new Set(jobIds).size, `${key}: ${JSON.stringify(done)}`).toBe(jobIds.length);
      const ofEdit = done.filter((x) => x.reason !== 'created');
      expect(
        ofEdit.map((x) => x.reason),
        `${key}: ${JSON.stringify(done)}`,
      ).toEqual(['updated']);
      expect(ofEdit[0]!.message).toContain(
        'the answer to an earlier attempt was lost; live state shows its write landed',
      );
    }
    const settledLines = standby.lines.filter((l) => String(l.msg).includes('recorded from what the service reports'));
    expect(settledLines.map((l) => l.key).sort()).toEqual([IMAGE, SCALE]);
    const byKey = new Map((await rows(standby)).map((r) => [r.key, r]));
    expect(byKey.get(IMAGE)?.sync?.status).toBe('synced');
    expect(byKey.get(SCALE)?.sync?.status).toBe('synced');
    expect(await manifestVersion(standby)).toBe(edited);
    // Nothing but reads after the kill: the writes the service took are not sent again.
    expect(nonGets(e)).toEqual(writesAtKill);
    expect(e.store.allDeployments().find((d) => d.name === 'lost-image')?.revisions.length).toBe(2);
  }, 240_000);

  it('converge apply killed after the service took its PATCH: the daemon settles it the same way, once', async (t) => {
    const e = await startEmulator({
      buildMs: 0,
      seed: {
        deployments: [
          {
            name: 'lost-apply',
            source: 'external_docker',
            source_config: { resource_spec: { max_scale: 2 } },
            source_revision_config: { image_uri: 'docker.io/acme/lost-apply:1' },
          },
        ],
      },
    });
    atEnd(t, () => e.close());
    const proxy = await heldProxy(e.url);
    atEnd(t, () => proxy.close());
    const redis = rawRedis();
    atEnd(t, () => redis.quit());
    const dir = await tempDir('lost-apply');
    atEnd(t, () => rm(dir, { recursive: true, force: true }));
    await writeFiles(dir, {
      'apply.yaml': dockerDeploymentYaml('lost-apply', { maxScale: 2, image: 'docker.io/acme/lost-apply:2' }),
    });
    const p = prefixOf(t, 'lost-apply');

    proxy.holdAnswersOf((method) => method === 'PATCH');
    const apply = spawnConverge([
      'apply',
      dir,
      '--api-url',
      proxy.url,
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      p,
      '--request-timeout',
      '10m',
    ]);
    atEnd(t, () => apply.kill('SIGKILL'));
    await until(
      'the PATCH taken by the service, its answer held',
      () => proxy.answersHeld().some((a) => a.endsWith(' 200')),
      60_000,
      20,
    );
    expect(e.store.allDeployments()[0]?.source_revision_config.image_uri).toBe('docker.io/acme/lost-apply:2');
    expect(await redis.hlen(pendingKey(p))).toBe(1);
    await apply.kill('SIGKILL');
    const writesAtKill = nonGets(e);
    proxy.release();

    // The daemon finds the service as the manifest says and enqueues nothing; apply's job comes back once its lock
    // lapsed (30 s, apply's job lock) and the daemon's worker settles its write from what the service reports.
    const daemon = await daemonOf(t, dir, [
      '--api-url',
      proxy.url,
      '--redis-prefix',
      p,
      '--resync',
      '1h',
      '--job-lock',
      '2s',
      '--log-level',
      'info',
    ]);
    await until(
      'the lost write settled: no pending write left',
      async () => (await redis.hlen(pendingKey(p))) === 0,
      90_000,
      200,
    ).catch(explained(daemon));
    const version = await until(
      '/status names the manifests the service runs',
      async () => {
        const [row] = await rows(daemon);
        const id = await manifestVersion(daemon);
        return row?.appliedFrom?.id !== undefined && row.appliedFrom.id === id ? id : undefined;
      },
      30_000,
      100,
    ).catch(explained(daemon));
    expect(version).toBeDefined();
    const done = (await history(daemon, 'Deployment/lost-apply')).filter((x) => x.type === 'write_done');
    expect(
      done.map((x) => x.reason),
      JSON.stringify(done),
    ).toEqual(['updated']);
    expect(done[0]!.message).toContain('the answer to an earlier attempt was lost; live state shows its write landed');
    expect(nonGets(e)).toEqual(writesAtKill);
  }, 240_000);
});
