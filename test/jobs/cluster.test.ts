// Redis Cluster for real: three masters on loopback (redis-server --cluster-enabled yes, redis-cli --cluster create),
// and converge's apply, the leader lease and the resync scheduler on it, every key on the slot of the prefix's hash tag.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster, Redis } from 'ioredis';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { currentFence } from '../../src/leader/lease.js';
import { openJobs } from '../../src/jobs/open-jobs.js';
import { closeRedis, connectProducer } from '../../src/store/redis.js';
import { electionLoops } from '../helpers/lease.js';
import { deploymentYaml, externalDockerSpec, manifestDir, runApplyCli, seedWith, writes } from '../helpers/apply.js';
import { until } from '../helpers/until.js';

const TOOLS = ['redis-server', 'redis-cli'].filter(
  (tool) => spawnSync(tool, ['--version'], { stdio: 'ignore' }).status !== 0,
);
if (TOOLS.length > 0)
  console.warn(
    `Redis Cluster test skipped: ${TOOLS.join(' and ')} not found on PATH (install redis-server and redis-tools to run it)`,
  );

/** A loopback port whose cluster bus port (port + 10000) is free too. */
async function clusterPort(taken: Set<number>): Promise<number> {
  const free = (port: number) =>
    new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 30_000);
    if (taken.has(port) || !(await free(port)) || !(await free(port + 10_000))) continue;
    taken.add(port);
    return port;
  }
}

describe.skipIf(TOOLS.length > 0)('Redis Cluster (three masters on loopback)', () => {
  const servers: ChildProcess[] = [];
  const ports: number[] = [];
  let dir = '';
  let url = '';
  let emulator: RunningEmulator;
  const prefix = `{cvt-cluster-${process.pid}}`;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'converge-cluster-'));
    const taken = new Set<number>();
    for (let i = 0; i < 3; i++) ports.push(await clusterPort(taken));
    for (const port of ports) {
      const child = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          join(dir, `nodes-${port}.conf`),
          '--cluster-node-timeout',
          '3000',
          '--save',
          '',
          '--appendonly',
          'no',
          '--daemonize',
          'no',
          '--dir',
          dir,
        ],
        { stdio: 'ignore' },
      );
      servers.push(child);
    }
    for (const port of ports)
      await until(`redis-server on port ${port} to answer`, async () => cli(port, 'PING').trim() === 'PONG');
    const created = spawnSync(
      'redis-cli',
      ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'],
      { encoding: 'utf8', timeout: 15_000 },
    );
    if (created.status !== 0) throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
    for (const port of ports)
      await until(`the cluster to be ok on port ${port}`, async () =>
        /cluster_state:ok/.test(cli(port, 'CLUSTER', 'INFO')),
      );
    url = `redis://127.0.0.1:${ports[0]}`;
    emulator = await startEmulator({ seed: seedWith([]), buildMs: 0 });
  }, 30_000);

  afterAll(async () => {
    await emulator?.close();
    for (const child of servers) {
      if (child.exitCode !== null) continue;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const settings = () => ({
    redisUrl: url,
    redisPrefix: prefix,
    redisCluster: true,
    attempts: 3,
    backoff: 10,
    concurrency: 2,
    globalRate: 0,
  });

  it('refuses a prefix without a hash tag at its start (one line, before connecting)', async () => {
    await expect(connectProducer({ ...settings(), redisPrefix: 'converge' })).rejects.toThrow(
      /redis_prefix "converge" has no hash tag at its start; with redis_cluster, give one such as \{converge\}/,
    );
  });

  it("converge apply through the cluster: creates, then a second apply writes nothing; every key on the hash tag's node", async () => {
    const tree = await manifestDir({
      'a.yaml': deploymentYaml('cl-a', externalDockerSpec('docker.io/a:1', 1)),
      'b.yaml': deploymentYaml('cl-b', externalDockerSpec('docker.io/b:1', 2)),
    });
    try {
      const argv = [
        tree.dir,
        '--api-url',
        emulator.url,
        '--redis-url',
        url,
        '--redis-cluster',
        '--redis-prefix',
        prefix,
      ];
      const first = await runApplyCli(argv, {});
      expect(first.stderr).toBe('');
      expect(first.code).toBe(0);
      expect(
        writes(emulator.requestLog)
          .map((e) => `${e.method} ${(e.body as { name?: string }).name}`)
          .sort(),
      ).toEqual(['POST cl-a', 'POST cl-b']);
      const second = await runApplyCli(argv, {});
      expect(second.code).toBe(0);
      expect(writes(emulator.requestLog)).toHaveLength(2);
    } finally {
      await tree.remove();
    }
    // The jobs, the applied state and the target claim all live on the one master that owns the tag's slot.
    const perNode = await Promise.all(ports.map(async (port) => (await keysOn(port, prefix)).length));
    expect(perNode.filter((n) => n > 0)).toHaveLength(1);
    expect(Math.max(...perNode)).toBeGreaterThan(5);
  }, 30_000);

  it('the leader lease and the resync scheduler on the cluster', async () => {
    const redis = await connectProducer(settings());
    const jobs = await openJobs(settings());
    try {
      expect(redis).toBeInstanceOf(Cluster);
      const events: string[] = [];
      // A lease far longer than the test: b can lead only because a released it, however slow the machine is.
      const loop = electionLoops(redis, prefix, 60_000, events);
      const a = loop('a');
      const b = loop('b');
      a.start();
      await until('a to lead', async () => a.token() !== undefined);
      b.start();
      await until('b to see the leader', async () => b.status().leader?.holder === 'a');
      expect(b.token()).toBeUndefined();
      const tokenA = a.token()!;
      expect(await currentFence(redis, prefix)).toBe(tokenA);
      expect(await a.stop()).toBe(true);
      await until('b to take over', async () => (b.token() ?? 0) > tokenA);
      const tokenB = b.token()!;
      await b.stop();
      expect(events.filter((e) => !e.includes('error'))).toEqual([`a leads ${tokenA}`, `b leads ${tokenB}`]);

      const cycles: string[] = [];
      const resync = await jobs.startResync({ everyMs: 300, jitter: 0, run: async (cycle) => void cycles.push(cycle) });
      try {
        await until('two resync cycles', async () => cycles.length >= 2);
      } finally {
        await resync.close();
      }
      expect(new Set(cycles).size).toBe(cycles.length);
    } finally {
      await jobs.close();
      await closeRedis(redis);
    }
  }, 20_000);
});

/** redis-cli's answer to a command sent to the node at `port` ('' when it does not answer). */
function cli(port: number, ...command: string[]): string {
  const run = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...command], {
    encoding: 'utf8',
    timeout: 5_000,
  });
  return run.status === 0 ? run.stdout : '';
}

/** Keys under `prefix` held by the node at `port` (SCAN on that node alone). */
async function keysOn(port: number, prefix: string): Promise<string[]> {
  const redis = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 0 });
  try {
    const out: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(
        cursor,
        'MATCH',
        `${prefix.replace(/[*?[\]\\{}]/g, '\\$&')}*`,
        'COUNT',
        1000,
      );
      cursor = next;
      out.push(...keys);
    } while (cursor !== '0');
    return out;
  } finally {
    redis.disconnect();
  }
}
