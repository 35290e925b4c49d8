// converge apply as a command: Redis unreachable, blocked resources and diagnostics, TTY progress, embedded mode.
import { writeFile } from 'node:fs/promises';
import net from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { applyCommand } from '../../src/cli/commands/apply.js';
import { parseCommandArgs } from '../../src/cli/command.js';
import { startEmulator } from '../../src/emulator/server.js';
import { deploymentYaml, externalDockerSpec, manifestDir, runApplyCli, seedWith, writes } from '../helpers/apply.js';
import { closedPort, closingServer, dropPrefix, keysUnder, rawRedis, REDIS_URL, testPrefix } from '../helpers/redis.js';

describe('converge apply (command)', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('Redis unreachable: one line, exit 1, after one connection attempt, nothing else started', async () => {
    const tree = await manifestDir({ 'a.yaml': deploymentYaml('a', externalDockerSpec('docker.io/a:1', 1)) });
    cleanups.push(() => tree.remove());
    const port = await closedPort();
    // The service: a loopback port that counts the connections it is sent (none: Redis is opened first).
    const service = await closingServer();
    cleanups.push(() => service.close());
    // ioredis opens its socket with node's net.createConnection: each call is one attempt to reach Redis.
    const attempts = vi.spyOn(net, 'createConnection');
    cleanups.push(async () => attempts.mockRestore());
    const run = await runApplyCli(
      [tree.dir, '--api-url', `http://127.0.0.1:${service.port}`, '--redis-url', `redis://127.0.0.1:${port}`],
      {},
    );
    expect(run).toEqual({
      code: 1,
      stdout: '',
      stderr: `converge apply: Redis at redis://127.0.0.1:${port} is unreachable (ECONNREFUSED): start redis-server, or set --redis-url or REDIS_URL\n`,
    });
    // Fail-fast: the first refusal is final (no retry, no reconnect waited for); the test's timeout guards a hang.
    expect(attempts).toHaveBeenCalledTimes(1);
    expect(service.accepted()).toBe(0);
  });

  it('a file that fails to load: writes nothing, names it at line:column, exit 1; --allow-partial applies the rest', async () => {
    const emulator = await startEmulator({ seed: seedWith([]), buildMs: 0 });
    const tree = await manifestDir({
      'good.yaml': deploymentYaml('good', externalDockerSpec('docker.io/good:1', 1)),
      'broken.yaml': deploymentYaml('broken', 'source: external_docker\nsurprise: 1'),
    });
    const prefix = testPrefix('cli');
    cleanups.push(
      () => emulator.close(),
      () => tree.remove(),
      () => dropPrefix(prefix),
    );
    const run = await runApplyCli(
      [tree.dir, '--api-url', emulator.url, '--redis-url', REDIS_URL, '--redis-prefix', prefix],
      {},
    );
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/broken\.yaml:\d+:\d+: error: .*surprise/);
    // The refusal names the file as it opens from the working directory: the directory as typed (absolute here) and the path in it.
    expect(run.stdout).toContain(
      `Apply refused: nothing was written: ${join(tree.dir, 'broken.yaml')}:7:3 fails to load; fix it and run again, or give --allow-partial`,
    );
    expect(writes(emulator.requestLog)).toEqual([]);
    const json = await runApplyCli(
      [tree.dir, '--api-url', emulator.url, '--redis-url', REDIS_URL, '--redis-prefix', prefix, '--output', 'json'],
      {},
    );
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ results: [], converged: false });
    expect(json.stderr).toContain('nothing was written');
    expect(writes(emulator.requestLog)).toEqual([]);
    const partial = await runApplyCli(
      [tree.dir, '--api-url', emulator.url, '--redis-url', REDIS_URL, '--redis-prefix', prefix, '--allow-partial'],
      {},
    );
    expect(partial.code).toBe(1);
    expect(partial.stdout).toMatch(/done +Deployment\/good: created/);
    expect(writes(emulator.requestLog).map((e) => `${e.method} ${(e.body as { name?: string }).name}`)).toEqual([
      'POST good',
    ]);
  });

  it('--allow-partial: applies the valid resources, and exits 1 naming blocked ones and manifest errors', async () => {
    const emulator = await startEmulator({
      seed: seedWith([
        { name: 'moved', source: 'internal_docker', source_revision_config: { image_uri: 'docker.io/m:1' } },
      ]),
      buildMs: 0,
    });
    const tree = await manifestDir({
      'good.yaml': deploymentYaml('good', externalDockerSpec('docker.io/good:1', 1)),
      'moved.yaml': deploymentYaml('moved', externalDockerSpec('docker.io/m:1', 1)),
      'broken.yaml': deploymentYaml('broken', 'source: external_docker\nsurprise: 1'),
      'paused.yaml': deploymentYaml('paused', externalDockerSpec('docker.io/p:1', 1)).replace(
        '  name: paused\n',
        '  name: paused\n  annotations:\n    converge/suspend: "true"\n',
      ),
    });
    const prefix = testPrefix('cli');
    cleanups.push(
      () => emulator.close(),
      () => tree.remove(),
      () => dropPrefix(prefix),
    );
    const run = await runApplyCli(
      [tree.dir, '--api-url', emulator.url, '--redis-url', REDIS_URL, '--redis-prefix', prefix, '--allow-partial'],
      {},
    );
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(
      /! blocked Deployment\/moved: source cannot be changed after creation \(live: "internal_docker", manifest: "external_docker"\)/,
    );
    expect(run.stdout).toMatch(/broken\.yaml:\d+:\d+: error: .*surprise/);
    expect(run.stdout).toMatch(/done +Deployment\/good: created/);
    expect(run.stdout).toMatch(
      /Apply incomplete: 1 done, 0 unchanged, 0 failed; not converged \(\d blocked, manifest errors\)\./,
    );
    // the suspended one is never applied, and apply says why (the decision's reason, as status shows it)
    expect(run.stdout).toContain(
      '  Deployment/paused: not written: Suspended: converge/suspend is true: changes are planned, never applied',
    );
    expect(run.stdout).not.toMatch(/done +Deployment\/paused/);
    expect(writes(emulator.requestLog).map((e) => `${e.method} ${(e.body as { name?: string }).name}`)).toEqual([
      'POST good',
    ]);
  });

  it('shows one updating progress line on a TTY stderr', async () => {
    const emulator = await startEmulator({ seed: seedWith([]), buildMs: 0 });
    const tree = await manifestDir({
      'a.yaml': deploymentYaml('a', externalDockerSpec('docker.io/a:1', 1)),
      'b.yaml': deploymentYaml('b', externalDockerSpec('docker.io/b:1', 1)),
    });
    const prefix = testPrefix('tty');
    cleanups.push(
      () => emulator.close(),
      () => tree.remove(),
      () => dropPrefix(prefix),
    );
    let out = '';
    let err = '';
    const stdout = Object.assign(new Writable({ write: (c, _e, done) => ((out += c.toString()), done()) }), {
      isTTY: true,
    });
    const stderr = Object.assign(new Writable({ write: (c, _e, done) => ((err += c.toString()), done()) }), {
      isTTY: true,
    });
    const args = parseCommandArgs(applyCommand, [
      tree.dir,
      '--api-url',
      emulator.url,
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      prefix,
    ]);
    const code = await applyCommand.run(args, { stdout, stderr, env: {}, cwd: process.cwd() });
    expect(code).toBe(0);
    expect(err).toContain('\r\x1b[Kapplying 1/2 ...');
    expect(err).toContain('\r\x1b[Kapplying 2/2 ...');
    expect(err.endsWith('\r\x1b[K')).toBe(true);
    expect(out).toContain('Apply complete: 2 done');
  });

  it('embedded mode runs under a private prefix and leaves no key behind', async () => {
    const state = await manifestDir({});
    const seedFile = join(state.dir, 'state.json');
    await writeFile(
      seedFile,
      JSON.stringify(
        seedWith([
          { name: 'old', source: 'external_docker', source_revision_config: { image_uri: 'docker.io/old:1' } },
        ]),
      ),
    );
    const tree = await manifestDir({
      'old.yaml': deploymentYaml('old', externalDockerSpec('docker.io/old:2', 1)),
      'new.yaml': deploymentYaml('new', externalDockerSpec('docker.io/new:1', 1)),
    });
    const prefix = testPrefix('embedded');
    cleanups.push(
      () => state.remove(),
      () => tree.remove(),
      () => dropPrefix(prefix),
    );
    const run = await runApplyCli(
      [
        tree.dir,
        '--api-url',
        'embedded',
        '--emulator-state',
        seedFile,
        '--redis-url',
        REDIS_URL,
        '--redis-prefix',
        prefix,
      ],
      {},
    );
    expect(run.stdout).toContain('Plan: 1 to create, 0 to update, 1 to adopt,');
    expect(run.stdout).toContain('Apply complete: 2 done, 0 unchanged, 0 failed.');
    expect(run.code).toBe(0);
    const redis = rawRedis();
    try {
      expect(await keysUnder(redis, prefix)).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });

  it('a usage mistake is one line', async () => {
    const run = await runApplyCli(
      [
        '/nonexistent/manifests',
        '--redis-url',
        REDIS_URL,
        '--redis-prefix',
        testPrefix('usage'),
        '--api-url',
        'http://127.0.0.1:9',
        '--output',
        'yaml',
      ],
      {},
    );
    expect(run).toEqual({ code: 1, stdout: '', stderr: 'converge apply: --output "yaml" is not one of text, json\n' });
  });
});
