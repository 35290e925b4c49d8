// `converge worker` as a child process: it takes apply's jobs from the shared queue, each write lands once, SIGTERM ends it with 0.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { dropPrefix, killAllConverge, REDIS_URL, spawnConverge, testPrefix } from './helpers.js';
import { runCapture } from '../helpers/cli.js';
import { deploymentYaml, externalDockerSpec, manifestDir, seedWith } from '../helpers/apply.js';

const NAMES = Array.from({ length: 12 }, (_, i) => `worker-app-${i}`);
let emulator: RunningEmulator;
let tree: { dir: string; remove(): Promise<void> };
const prefix = testPrefix('worker-cmd');

beforeAll(async () => {
  emulator = await startEmulator({ seed: seedWith([]), latencyMs: 30, buildMs: 0 });
  tree = await manifestDir(
    Object.fromEntries(
      NAMES.map((n) => [`${n}.yaml`, deploymentYaml(n, externalDockerSpec(`docker.io/acme/${n}:1`, 2))]),
    ),
  );
});
afterAll(async () => {
  await killAllConverge();
  await emulator.close();
  await tree.remove();
  await dropPrefix(prefix);
});

describe('converge worker', () => {
  it('shares the jobs of an apply, and stops cleanly on SIGTERM', async () => {
    const settings = ['--api-url', emulator.url, '--redis-url', REDIS_URL, '--redis-prefix', prefix];
    const worker = spawnConverge(['worker', ...settings, '--concurrency', '10', '--log-level', 'debug']);
    await worker.waitForLine((l) => l.msg === 'worker started');

    const apply = await runCapture(['apply', tree.dir, ...settings, '--concurrency', '1'], { NO_COLOR: '1' });
    expect(apply.stdout).toContain('Apply complete: 12 done');
    expect(apply.code).toBe(0);

    const creates = emulator.requestLog.filter(
      (e) => e.method === 'POST' && e.route === '/v2/deployments' && e.status === 201,
    );
    expect(creates.map((e) => (e.body as { name: string }).name).sort()).toEqual([...NAMES].sort());
    const doneByWorker = worker.lines.filter((l) => l.msg === 'job done');
    expect(doneByWorker.length).toBeGreaterThan(0);

    worker.child.kill('SIGTERM');
    expect((await worker.exited).code).toBe(0);
  });

  it('refuses the embedded emulator with one line', async () => {
    const { code, stderr } = await runCapture(
      ['worker', '--api-url', 'embedded', '--redis-url', REDIS_URL, '--redis-prefix', prefix],
      {},
    );
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain('needs the service URL');
  });
});
