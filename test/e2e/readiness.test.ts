// /readyz names the fix (issue 24, item 5), through the built daemon: Redis gone names its URL (password redacted) and
// what to do, as the CLI does; a wrong API key names CONVERGE_API_KEY and is the one failing cause.
import { rm } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import { dockerDeploymentYaml, killAllConverge, redisChild, REDIS_URL, tempDir, until, writeFiles } from './helpers.js';
import { atEnd, daemonOf, prefixOf } from './scoped.js';

afterAll(killAllConverge);

const PASSWORD = 'readyz-pw-5b1e0c';

describe.concurrent('/readyz names the fix', () => {
  it("Redis gone: the Redis URL (password redacted) and what to do, not ioredis' own words", async (t) => {
    const redis = await redisChild({ extraArgs: ['--requirepass', PASSWORD] });
    atEnd(t, () => redis.remove());
    const e = await startEmulator({ buildMs: 0 });
    atEnd(t, () => e.close());
    const dir = await tempDir('readyz-redis');
    atEnd(t, () => rm(dir, { recursive: true, force: true }));
    await writeFiles(dir, { 'a.yaml': dockerDeploymentYaml('readyz-a', { maxScale: 1 }) });
    const url = `redis://:${PASSWORD}@127.0.0.1:${redis.port}`;
    const daemon = await daemonOf(t, dir, [
      '--api-url',
      e.url,
      '--redis-url',
      url,
      '--redis-prefix',
      '{readyz}',
      '--resync',
      '1h',
    ]);
    await until('/readyz 200', async () => (await daemon.readyz()).status === 200, 20_000, 100);

    await redis.stop('SIGKILL');
    const down = await until(
      '/readyz to fail on Redis',
      async () => {
        const r = await daemon.readyz();
        return r.status === 503 && r.body.checks.find((c) => c.name === 'redis' && !c.ok) ? r : undefined;
      },
      15_000,
      100,
    );
    const detail = down.body.checks.find((c) => c.name === 'redis')!.detail!;
    expect(detail).toMatch(
      new RegExp(
        `^Redis at redis://:\\*\\*\\*\\*@127\\.0\\.0\\.1:${redis.port} (is unreachable \\(.+\\): start redis-server, or set --redis-url or REDIS_URL|gave no answer to PING within \\d+ ms: check that it is up, or set --redis-url or REDIS_URL)$`,
      ),
    );
    expect(JSON.stringify(down.body)).not.toContain(PASSWORD);
    expect(JSON.stringify(down.body)).not.toContain("Stream isn't writeable");
    expect(JSON.stringify(down.body)).not.toContain('enableOfflineQueue');
  }, 60_000);

  it('a wrong API key: the service check names CONVERGE_API_KEY, and the manifests are not a second cause', async (t) => {
    const e = await startEmulator({ buildMs: 0, apiKey: 'the-right-key' });
    atEnd(t, () => e.close());
    const dir = await tempDir('readyz-key');
    atEnd(t, () => rm(dir, { recursive: true, force: true }));
    await writeFiles(dir, { 'a.yaml': dockerDeploymentYaml('readyz-b', { maxScale: 1 }) });
    const prefix = prefixOf(t, 'readyz-key');
    const daemon = await daemonOf(
      t,
      dir,
      ['--api-url', e.url, '--redis-url', REDIS_URL, '--redis-prefix', prefix, '--resync', '1h'],
      { CONVERGE_API_KEY: 'a-wrong-key' },
    );
    const failing = await until(
      '/readyz to fail on the service',
      async () => {
        const r = await daemon.readyz();
        return r.body.checks.find((c) => c.name === 'service' && !c.ok && c.detail?.startsWith('last request failed'))
          ? r
          : undefined;
      },
      15_000,
      100,
    );
    expect(failing.status).toBe(503);
    const service = failing.body.checks.find((c) => c.name === 'service')!;
    expect(service.detail).toMatch(
      /^last request failed: GET \S+ answered 40[13]; check the API key in CONVERGE_API_KEY \(--api-key\)/,
    );
    expect(failing.body.checks.filter((c) => !c.ok).map((c) => c.name)).toEqual(['service']);
    expect(JSON.stringify(failing.body)).not.toContain('not loaded yet');
    expect(JSON.stringify(failing.body)).not.toContain('a-wrong-key');
  }, 60_000);
});
