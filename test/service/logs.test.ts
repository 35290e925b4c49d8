// ServiceClient's log reads and the build log tail: found, gone, a read retried like a GET, and a service without the
// log endpoints said once, never an error, never asked again.
import { afterAll, describe, expect, it } from 'vitest';
import { startEmulator, type EmulatorOptions, type RunningEmulator } from '../../src/emulator/server.js';
import { buildLogTail } from '../../src/service/build-log-tail.js';
import { ServiceClient } from '../../src/service/client.js';
import { recordWrites } from '../../src/service/call-scope.js';

const emulators: RunningEmulator[] = [];
const clients: ServiceClient[] = [];
const NOBODY = '00000000-0000-4000-8000-000000000000';

async function setUp(options: Pick<EmulatorOptions, 'specOnly' | 'failRate' | 'randomFor'> = {}) {
  const e = await startEmulator({ buildMs: 0, buildFail: /^bad/, buildLogSecrets: true, ...options });
  emulators.push(e);
  const client = new ServiceClient({ baseUrl: e.url, retry: { baseDelayMs: 1, maxDelayMs: 5 } });
  clients.push(client);
  const notices: string[] = [];
  client.onNotice((m) => notices.push(m));
  return { e, client, notices };
}

async function createBad(client: ServiceClient): Promise<{ id: string; revision: string }> {
  const created = await client.createDeployment({
    name: 'bad-one',
    source: 'external_docker',
    source_config: {},
    source_revision_config: { image_uri: 'docker.io/acme/a:1' },
    secrets: [{ name: 'TOKEN', value: 'tok-value-31' }],
  });
  return { id: created.id, revision: created.latest_revision_id! };
}

afterAll(async () => {
  for (const c of clients) await c.close();
  for (const e of emulators) await e.close();
});

describe('log reads', () => {
  it('reads build and deploy logs; a deployment or revision that is not there is gone; no write is recorded', async () => {
    const { client, e } = await setUp();
    const bad = await createBad(client);
    const { value: read, writes } = await recordWrites(() =>
      client.buildLogs(bad.id, bad.revision, { order: 'desc', limit: 2 }),
    );
    expect(writes).toEqual([]);
    if (read.outcome !== 'found') throw new Error(read.outcome);
    expect(read.page.logs.map((l) => l.message)).toEqual([
      'Build failed: "pip install -e ." exited with status 1',
      expect.stringMatching(/^ERROR: Could not find a version/),
    ]);
    expect(read.page.next_offset).toBe('2');
    expect(await client.buildLogs(bad.id, NOBODY, {})).toEqual({ outcome: 'gone' });
    expect(await client.deployLogs(NOBODY, {})).toEqual({ outcome: 'gone' });
    const deploy = await client.deployLogs(bad.id, { order: 'asc' });
    expect(deploy).toEqual({ outcome: 'found', page: { logs: [], next_offset: '0' } });
    expect(e.requestLog.filter((r) => r.route.startsWith('/v1/projects')).map((r) => r.method)).toEqual([
      'POST',
      'POST',
      'POST',
      'POST',
    ]);
  });

  it('the tail: at most 20 lines, oldest first, every declared value masked; a 503 is retried like a GET', async () => {
    // The fail-rate draws: the create passes, the first log read gets a 503, every later request passes.
    const failDraws = [0.99, 0];
    const { client, e } = await setUp({
      failRate: 0.5,
      randomFor: (site) => (site === 'fail' ? () => failDraws.shift() ?? 0.99 : () => 0.99),
    });
    const bad = await createBad(client);
    const tail = await buildLogTail(client, { id: bad.id }, bad.revision, ['tok-value-31']);
    expect(tail.note).toBeUndefined();
    expect(tail.lines.length).toBeLessThanOrEqual(20);
    expect(tail.lines.at(-1)).toMatch(/\[ERROR\] Build failed: "pip install -e \." exited with status 1$/);
    expect(tail.lines.join('\n')).toContain('Environment: TOKEN=********');
    expect(tail.lines.join('\n')).not.toContain('tok-value-31');
    expect(e.requestLog.filter((r) => r.route.endsWith('/build_logs')).map((r) => r.outcome)).toEqual([
      'fault-503',
      'ok',
    ]);
  });

  it('a service without the log endpoints: said once, no lines, never an error, not asked again', async () => {
    const { client, e, notices } = await setUp({ specOnly: true });
    const bad = await createBad(client);
    const first = await buildLogTail(client, { id: bad.id }, bad.revision, []);
    expect(first).toEqual({ lines: [], note: 'the service has no build log endpoint' });
    expect(await client.deployLogs(bad.id, {})).toEqual({ outcome: 'no-endpoint', status: 0 });
    expect(notices).toEqual([
      expect.stringMatching(
        /^the service has no \/v1\/projects\/\{project_id\}\/revisions\/\{revision_id\}\/build_logs \(it answered 404\): build and deploy logs cannot be shown/,
      ),
    ]);
    expect(e.requestLog.filter((r) => r.path.startsWith('/v1/projects'))).toHaveLength(1);
  });
});
