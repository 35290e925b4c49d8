// `converge emulator`: flags, the listening line, request log lines, and a clean stop on a real SIGTERM or SIGINT.
import { PassThrough } from 'node:stream';
import { describe, expect, test } from 'vitest';
import { parseCommandArgs, type CommandIo } from '../../src/cli/command.js';
import { emulatorCommand } from '../../src/cli/commands/emulator.js';
import { emulatorOptionsFromArgs } from '../../src/cli/commands/emulator-run.js';
import { until } from './helpers.js';

function capture(): { io: CommandIo; out: () => string; err: () => string } {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c) => (out += c));
  stderr.on('data', (c) => (err += c));
  return { io: { stdout, stderr, env: {}, cwd: process.cwd() }, out: () => out, err: () => err };
}

const EXAMPLE = new URL('../../examples/emulator-state.yaml', import.meta.url).pathname;

describe('converge emulator', () => {
  test('flags become options; bad values are one clear message', () => {
    const options = emulatorOptionsFromArgs(
      parseCommandArgs(emulatorCommand, [
        '--port',
        '8099',
        '--fail-rate',
        '0.2',
        '--page-cap',
        '5',
        '--secrets',
        'omitted',
        '--build-ms',
        '50',
        '--latency-ms',
        '20',
        '--allow-local-discovery',
      ]).values,
      { CONVERGE_EMULATOR_API_KEY: 'from-env' },
    );
    expect(options).toMatchObject({
      port: 8099,
      host: '127.0.0.1',
      failRate: 0.2,
      pageCap: 5,
      secrets: 'omitted',
      buildMs: 50,
      latencyMs: 20,
      allowLocalDiscovery: true,
      apiKey: 'from-env',
    });
    expect(typeof options.discover).toBe('function');
    // The real-service knobs: defaults, then each flag.
    expect(options).toMatchObject({
      secretsPatch: 'merge',
      echo: 'exact',
      specOnly: false,
      omitTenantId: false,
      lenientCreate: false,
      buildFail: undefined,
      deployFail: undefined,
    });
    const real = emulatorOptionsFromArgs(
      parseCommandArgs(emulatorCommand, [
        '--secrets-patch',
        'replace',
        '--echo',
        'real',
        '--spec-only',
        '--omit-tenant-id',
        '--lenient-create',
        '--build-fail',
        '^flaky-',
        '--deploy-fail',
        'canary$',
      ]).values,
      {},
    );
    expect(real).toMatchObject({
      secretsPatch: 'replace',
      echo: 'real',
      specOnly: true,
      omitTenantId: true,
      lenientCreate: true,
      buildFail: /^flaky-/,
      deployFail: /canary$/,
    });
    expect(options).toMatchObject({ anyTarballPath: false, orgScopedKey: false, buildLogSecrets: false });
    const tool = emulatorOptionsFromArgs(
      parseCommandArgs(emulatorCommand, ['--any-tarball-path', '--org-scoped-key', '--build-log-secrets']).values,
      {},
    );
    expect(tool).toMatchObject({ anyTarballPath: true, orgScopedKey: true, buildLogSecrets: true });
    expect(options.failDeletesMs).toBeUndefined();
    expect(
      emulatorOptionsFromArgs(parseCommandArgs(emulatorCommand, ['--fail-deletes-ms', '60000']).values, {}),
    ).toMatchObject({ failDeletesMs: 60_000 });
    const bad: Array<[string[], RegExp]> = [
      [['--fail-rate', '2'], /--fail-rate: "2" is not a rate between 0 and 1/],
      [['--reset-rate', 'lots'], /--reset-rate: "lots" is not a rate/],
      [['--port=-1'], /--port: "-1" is not a whole number/],
      [['--port', '70000'], /not a port number/],
      [['--page-cap', '0'], /--page-cap: "0" is not a whole number >= 1/],
      [['--secrets', 'shown'], /--secrets: "shown" is not one of plain, masked, omitted/],
      [['--build-ms', '1.5'], /--build-ms/],
      [['--secrets-patch', 'upsert'], /--secrets-patch: "upsert" is not one of merge, replace/],
      [['--echo', 'loud'], /--echo: "loud" is not one of exact, real/],
      [['--build-fail', '(unclosed'], /--build-fail: "\(unclosed" is not a regular expression/],
    ];
    for (const [argv, message] of bad) {
      expect(() => emulatorOptionsFromArgs(parseCommandArgs(emulatorCommand, argv).values, {})).toThrow(message);
    }
    expect(() => parseCommandArgs(emulatorCommand, ['--colour', 'red'])).toThrow(/converge emulator --help/);
  });

  test('--help documents every knob', () => {
    for (const flag of [
      'secrets-patch',
      'echo',
      'spec-only',
      'omit-tenant-id',
      'lenient-create',
      'build-fail',
      'deploy-fail',
      'build-ms',
      'any-tarball-path',
      'org-scoped-key',
      'build-log-secrets',
    ]) {
      const option = emulatorCommand.options[flag];
      expect(option, flag).toBeDefined();
      expect(option!.description.length, flag).toBeGreaterThan(20);
    }
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    test(`serves the seed, logs one JSON line per request, and exits 0 on ${signal}`, async () => {
      const { io, out, err } = capture();
      const args = parseCommandArgs(emulatorCommand, [
        '--seed',
        EXAMPLE,
        '--log-requests',
        '--build-ms',
        '0',
        '--api-key',
        'k-123',
      ]);
      const exit = emulatorCommand.run(args, io);
      const url = await until(
        'the emulator to say where it listens',
        () => /emulator listening on (http:\/\/127\.0\.0\.1:\d+)\n/.exec(err())?.[1],
      );
      const unauthorized = await fetch(`${url}/v2/deployments`);
      expect(unauthorized.status).toBe(401);
      const page = await fetch(`${url}/v2/deployments?limit=3`, { headers: { 'x-api-key': 'k-123' } });
      expect(page.status).toBe(200);
      expect(((await page.json()) as { resources: unknown[] }).resources).toHaveLength(3);
      const lines = await until('the request log lines', () => {
        const all = out().trim().split('\n').filter(Boolean);
        return all.length >= 2 ? all.map((l) => JSON.parse(l)) : undefined;
      });
      expect(lines[0]).toMatchObject({ method: 'GET', route: '/v2/deployments', status: 401, outcome: 'error' });
      expect(lines[1]).toMatchObject({ method: 'GET', query: { limit: '3' }, status: 200, outcome: 'ok' });
      expect(out()).not.toContain('k-123');
      process.kill(process.pid, signal);
      expect(await exit).toBe(0);
      await expect(fetch(`${url}/v2/deployments`)).rejects.toThrow();
      expect(process.listenerCount('SIGTERM') + process.listenerCount('SIGINT')).toBe(0);
    });
  }

  test('--allow-local-discovery also comes from CONVERGE_ALLOW_LOCAL_DISCOVERY; the real discovery hook is plugged in', async () => {
    const messages: Record<string, string> = {};
    for (const allow of ['true', 'false']) {
      const { io, err } = capture();
      io.env = { CONVERGE_ALLOW_LOCAL_DISCOVERY: allow };
      const exit = emulatorCommand.run(parseCommandArgs(emulatorCommand, []), io);
      const url = await until(
        'the emulator to say where it listens',
        () => /listening on (http:\/\/\S+)\n/.exec(err())?.[1],
      );
      const answer = await fetch(`${url}/v2/auth/providers/mcp-discover`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ provider_id: 'local', name: 'Local', mcp_server_url: 'http://127.0.0.1:9/mcp' }),
      });
      expect(answer.status).toBe(422);
      const body = (await answer.json()) as { detail: Array<{ loc: string[]; msg: string }> };
      expect(body.detail[0]!.loc).toEqual(['body', 'mcp_server_url']);
      messages[allow] = body.detail.map((d) => d.msg).join('; ');
      process.kill(process.pid, 'SIGTERM');
      expect(await exit).toBe(0);
    }
    expect(messages.false).toMatch(/allow-local-discovery|https/i);
    expect(messages.true).not.toMatch(/allow-local-discovery/i);
  });

  test('a port in use is one clear error', async () => {
    const { io, err } = capture();
    const first = emulatorCommand.run(parseCommandArgs(emulatorCommand, []), io);
    const url = await until(
      'the emulator to say where it listens',
      () => /listening on (http:\/\/\S+)\n/.exec(err())?.[1],
    );
    const port = new URL(url).port;
    const second = capture();
    await expect(emulatorCommand.run(parseCommandArgs(emulatorCommand, ['--port', port]), second.io)).rejects.toThrow(
      new RegExp(`emulator cannot listen on 127.0.0.1:${port} \\(EADDRINUSE\\)`),
    );
    process.kill(process.pid, 'SIGTERM');
    expect(await first).toBe(0);
  });
});
