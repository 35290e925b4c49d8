// Secrets never leave memory: planted secret values, the API key and the Redis password are searched (plain, base64,
// hex, unsalted sha256) in every output, log line (debug and trace), error, metric, status page and Redis key of plan,
// apply and the daemon, against the emulator (which echoes secret values) and a service that echoes requests in errors.
import { createHash } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { json, startServer, type ScriptedServer } from '../service/scripted-server.js';
import {
  dockerDeploymentYaml,
  killAllConverge,
  providerYaml,
  redisChild,
  runConverge,
  startDaemon,
  tempDir,
  until,
  writeFiles,
  type DaemonHandle,
  type RedisChild,
} from './helpers.js';

const PLANTED = {
  envSecret: 'planted-env-secret-Zq81xT4',
  fileSecret: 'planted-file-secret-Kp27wQ9',
  rotatedFileSecret: 'planted-rotated-file-secret-Jm04yE2',
  literalSecret: 'planted-literal-secret-Wr66pA5',
  clientSecret: 'planted-client-secret-Vn53rB6',
  apiKey: 'planted-api-key-Hx72mC1',
  wrongKey: 'planted-wrong-key-Ld48sF3',
  redisPassword: 'planted-redis-pass-Tc19uG8',
};

/** Every form in which a value must not appear: as is, base64 (both alphabets), hex, and its unsalted sha256. */
function forms(value: string): Array<[string, string]> {
  const sha = createHash('sha256').update(value).digest();
  const b64 = Buffer.from(value).toString('base64');
  return [
    ['plain', value],
    ['base64', b64.replace(/=+$/, '')],
    ['base64url', Buffer.from(value).toString('base64url')],
    ['hex', Buffer.from(value).toString('hex')],
    ['sha256 hex', sha.toString('hex')],
    ['sha256 base64', sha.toString('base64').replace(/=+$/, '')],
  ];
}

const captured: Array<{ where: string; text: string }> = [];
function capture(where: string, text: string): void {
  captured.push({ where, text });
}

/** Which planted value, in which form, appears where. */
function hits(): string[] {
  const out: string[] = [];
  for (const { where, text } of captured) {
    for (const [name, value] of Object.entries(PLANTED)) {
      for (const [form, needle] of forms(value)) if (text.includes(needle)) out.push(`${name} (${form}) in ${where}`);
    }
  }
  return out;
}

async function captureDaemon(label: string, d: DaemonHandle, withCli = false): Promise<void> {
  capture(`${label} /status`, JSON.stringify(await d.status()));
  capture(`${label} /metrics`, await d.metrics());
  capture(`${label} /readyz`, JSON.stringify((await d.readyz()).body));
  capture(`${label} /healthz`, await (await fetch(`${d.url}/healthz`)).text());
  if (!withCli) return;
  // `converge status` renders /status and /readyz: text and json
  const [text, jsonOut] = await Promise.all([
    runConverge(['status', '--url', d.url]),
    runConverge(['status', '--url', d.url, '--output', 'json']),
  ]);
  capture(`${label} converge status`, text.stdout + text.stderr);
  capture(`${label} converge status --output json`, jsonOut.stdout + jsonOut.stderr);
}

/** Every key and every value of every type in the whole (dedicated) Redis, as text. */
async function dumpRedis(url: string): Promise<{ keys: string[]; text: string }> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  const parts: string[] = [];
  const keys: string[] = [];
  try {
    let cursor = '0';
    do {
      const [next, batch] = await redis.scanBuffer(cursor, 'COUNT', 1000);
      cursor = String(next);
      for (const raw of batch) {
        const key = raw.toString('latin1');
        keys.push(key);
        parts.push(`KEY ${key}`);
        const type = await redis.type(raw);
        if (type === 'string') parts.push((await redis.getBuffer(raw))?.toString('latin1') ?? '');
        else if (type === 'hash')
          parts.push(
            ...Object.entries(await redis.hgetallBuffer(raw)).flatMap(([field, value]) => [
              field,
              value.toString('latin1'),
            ]),
          );
        else if (type === 'list')
          parts.push(...(await redis.lrangeBuffer(raw, 0, -1)).map((b) => b.toString('latin1')));
        else if (type === 'set') parts.push(...(await redis.smembersBuffer(raw)).map((b) => b.toString('latin1')));
        else if (type === 'zset')
          parts.push(...(await redis.zrangeBuffer(raw, 0, -1, 'WITHSCORES')).map((b) => b.toString('latin1')));
        else if (type === 'stream') {
          for (const [id, fields] of await redis.xrangeBuffer(raw, '-', '+'))
            parts.push(id.toString('latin1'), ...fields.map((b) => b.toString('latin1')));
        } else parts.push(`(type ${type})`);
      }
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return { keys, text: parts.join('\n') };
}

/** A service that answers every write with an error quoting the request body and the API key it received. */
async function echoingService(): Promise<ScriptedServer> {
  const seen = new Map<string, number>();
  return startServer((req, res) => {
    if (req.method === 'GET' && req.url.pathname === '/v2/deployments')
      return json(res, 200, { resources: [], offset: Number(req.url.searchParams.get('offset') ?? 0) });
    // no provider reads (a service of the spec alone): converge falls back to creating providers blind
    if (req.method === 'GET' && req.url.pathname.startsWith('/v2/auth/providers'))
      return json(res, 404, { detail: 'Not Found' });
    const key = String(req.headers['x-api-key'] ?? '');
    const echo = `you sent ${req.body} with key ${key}`;
    const n = (seen.get(req.url.pathname) ?? 0) + 1;
    seen.set(req.url.pathname, n);
    // first a retryable 503, then a final 422 (loc/msg) or 400 (detail), each quoting everything
    if (n % 2 === 1) return json(res, 503, { detail: echo });
    if (req.url.pathname === '/v2/deployments')
      return json(res, 422, { detail: [{ loc: ['body', 'secrets', 0, 'value'], msg: echo, type: 'value_error' }] });
    return json(res, 400, { detail: echo });
  });
}

describe('no secret value, API key or Redis password in any output or at rest', () => {
  let redis: RedisChild;
  let redisUrl: string;
  let emulator: RunningEmulator;
  let echo: ScriptedServer;
  let dir: string;
  let secretFile: string;
  /** The daemons' environment; cliEnv adds CONVERGE_ALLOW_LITERAL_SECRETS for plan and apply. */
  let env: NodeJS.ProcessEnv;
  let cliEnv: NodeJS.ProcessEnv;

  beforeAll(async () => {
    redis = await redisChild({ extraArgs: ['--requirepass', PLANTED.redisPassword] });
    redisUrl = `redis://:${PLANTED.redisPassword}@127.0.0.1:${redis.port}`;
    // the emulator echoes secret values back in plain (some deployments of the service do)
    emulator = await startEmulator({ apiKey: PLANTED.apiKey, secrets: 'plain', buildMs: 0 });
    echo = await echoingService();
    dir = await tempDir('secrets');
    const outside = await tempDir('secret-files');
    secretFile = join(outside, 'file-token');
    await writeFile(secretFile, `${PLANTED.fileSecret}\n`);
    await writeFiles(dir, {
      'env-secret.yaml': dockerDeploymentYaml('env-secret', {
        maxScale: 2,
        secrets: [['TOKEN', 'PLANTED_ENV_SECRET']],
      }),
      'file-secret.yaml': [
        'apiVersion: converge/v1',
        'kind: Deployment',
        'metadata:',
        '  name: file-secret',
        'spec:',
        '  source: external_docker',
        '  source_revision_config:',
        '    image_uri: docker.io/acme/file-secret:1',
        '  secrets:',
        '    - name: FILE_TOKEN',
        `      valueFrom: { file: ${secretFile} }`,
        '',
      ].join('\n'),
      // a literal value: plan and apply take it (--allow-literal-secrets, local use); the daemon runs without that setting
      // (converge run refuses it), so it sees this file as a manifest error, and must not show the value either
      'literal-secret.yaml': [
        'apiVersion: converge/v1',
        'kind: Deployment',
        'metadata:',
        '  name: literal-secret',
        'spec:',
        '  source: external_docker',
        '  source_revision_config:',
        '    image_uri: docker.io/acme/literal-secret:1',
        '  secrets:',
        '    - name: LITERAL_TOKEN',
        `      value: ${PLANTED.literalSecret}`,
        '',
      ].join('\n'),
      // the emulator refuses it (422: external_docker needs image_uri) after converge sent its secret
      'needs-image.yaml':
        'apiVersion: converge/v1\nkind: Deployment\nmetadata:\n  name: needs-image\nspec:\n  source: external_docker\n  secrets:\n    - name: TOKEN\n      valueFrom: { env: PLANTED_ENV_SECRET }\n',
      'provider.yaml': providerYaml('planted', 'PLANTED_CLIENT_SECRET'),
    });
    env = {
      PLANTED_ENV_SECRET: PLANTED.envSecret,
      PLANTED_CLIENT_SECRET: PLANTED.clientSecret,
      CONVERGE_API_KEY: PLANTED.apiKey,
      REDIS_URL: redisUrl,
      CONVERGE_REDIS_PREFIX: '{converge-secrets}',
    };
    cliEnv = { ...env, CONVERGE_ALLOW_LITERAL_SECRETS: 'true' };
    cleanup.push(() => rm(outside, { recursive: true, force: true }));
  }, 120_000);

  const cleanup: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    await killAllConverge();
    await emulator?.close();
    await echo?.close();
    await redis?.remove();
    if (dir) await rm(dir, { recursive: true, force: true });
    for (const c of cleanup) await c();
  });

  it('plan, apply and the daemon (debug, trace), with errors forced, leave no trace of a planted value', async () => {
    const api = ['--api-url', emulator.url];
    // plan in every format
    const formats = ['text', 'json', 'markdown'];
    const [denied, missing, ...plans] = await Promise.all([
      runConverge(['plan', dir, ...api], { ...cliEnv, CONVERGE_API_KEY: PLANTED.wrongKey }),
      runConverge(['plan', dir, ...api], { ...cliEnv, CONVERGE_API_KEY: '' }),
      ...formats.map((output) => runConverge(['plan', dir, ...api, '--output', output], cliEnv)),
    ]);
    plans.forEach((r, i) => {
      expect(r.code, r.stderr).toBe(0);
      capture(`plan --output ${formats[i]}`, r.stdout + r.stderr);
    });
    // a wrong key: 403, one line, no key
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/answered 403/);
    capture('plan with a wrong key', denied.stdout + denied.stderr);
    expect(missing.stderr).toMatch(/answered 401/);
    capture('plan without a key', missing.stdout + missing.stderr);

    // apply at debug: three resources land, the 422 is reported with the service's message
    const applied = await runConverge(
      ['apply', dir, ...api, '--log-level', 'debug', '--backoff', '20ms', '--output', 'text'],
      cliEnv,
      60_000,
    );
    capture('apply', applied.stdout + applied.stderr);
    expect(applied.code).toBe(1);
    expect(applied.stdout + applied.stderr).toMatch(/422/);
    const appliedJson = await runConverge(
      ['apply', dir, ...api, '--log-level', 'trace', '--output', 'json'],
      cliEnv,
      60_000,
    );
    capture('apply --output json (second run)', appliedJson.stdout + appliedJson.stderr);

    // the daemon at trace level: converges, meets the 422 again, then a rotated file secret is written
    const daemon = await startDaemon(dir, [...api, '--log-level', 'trace', '--resync', '2s', '--backoff', '20ms'], env);
    // Reported as its job's failure, then (from the next reconcile on) held as WriteRefused with the service's message:
    // either row says the 422, and a poll may see only the second.
    await until(
      'the daemon to report the 422',
      async () =>
        (await daemon.status()).resources.some(
          (r) => r.name === 'needs-image' && (r.state === 'failed' || r.sync?.reason === 'WriteRefused'),
        ),
      20_000,
      200,
    );
    const before = emulator.store.allDeployments().find((d) => d.name === 'file-secret')!.revisions.length;
    await writeFile(secretFile, `${PLANTED.rotatedFileSecret}\n`);
    await until(
      'the rotated secret to be written',
      () => emulator.store.allDeployments().find((d) => d.name === 'file-secret')!.revisions.length > before,
      20_000,
      200,
    );
    await until(
      'a resync after the rotation',
      async () => (await daemon.status()).resources.find((r) => r.name === 'file-secret')?.state === 'synced',
      20_000,
      200,
    );
    await captureDaemon('daemon (trace)', daemon, true);
    await daemon.kill('SIGTERM');
    capture('daemon (trace) output', daemon.stdout() + daemon.stderr());
    expect(daemon.lines.filter((l) => l.level === 20).length, 'debug lines were written').toBeGreaterThan(0);

    // the daemon with a wrong key, at debug: not ready, reports 403, keeps running
    const locked = await startDaemon(dir, [...api, '--log-level', 'debug', '--resync', '2s'], {
      ...env,
      CONVERGE_API_KEY: PLANTED.wrongKey,
    });
    await until(
      'the wrong key to be reported',
      async () => (await locked.status()).lastReconcile?.error?.includes('403'),
      15_000,
      200,
    );
    await captureDaemon('daemon (wrong key)', locked, true);
    await locked.kill('SIGTERM');
    capture('daemon (wrong key) output', locked.stdout() + locked.stderr());

    // a service that quotes the request (with its secrets) and the key in its errors: apply and the daemon
    const echoApi = ['--api-url', echo.url, '--redis-prefix', '{converge-echo}'];
    const echoed = await runConverge(
      ['apply', dir, ...echoApi, '--log-level', 'debug', '--backoff', '20ms', '--attempts', '2'],
      cliEnv,
      60_000,
    );
    capture('apply against an echoing service', echoed.stdout + echoed.stderr);
    expect(echoed.code).toBe(1);
    expect(echoed.stdout + echoed.stderr).toMatch(/you sent/);
    const echoDaemon = await startDaemon(
      dir,
      [...echoApi, '--log-level', 'debug', '--backoff', '20ms', '--attempts', '2'],
      env,
    );
    await until(
      'the echoing service to fail every job',
      async () => (await echoDaemon.status()).resources.filter((r) => r.state === 'failed').length === 4,
      20_000,
      200,
    );
    await captureDaemon('daemon (echoing service)', echoDaemon);
    await echoDaemon.kill('SIGTERM');
    capture('daemon (echoing service) output', echoDaemon.stdout() + echoDaemon.stderr());
    // the echoing service did receive the secrets and the key (so their absence above means something)
    const received = echo.received.map((r) => r.body + JSON.stringify(r.headers)).join('\n');
    for (const value of [
      PLANTED.envSecret,
      PLANTED.rotatedFileSecret,
      PLANTED.literalSecret,
      PLANTED.clientSecret,
      PLANTED.apiKey,
    ])
      expect(received).toContain(value);

    // Redis at rest: every key and value of every type
    await sleep(200);
    const dump = await dumpRedis(redisUrl);
    expect(dump.keys.length).toBeGreaterThan(10);
    expect(dump.text).toMatch(/[0-9a-f]{64}/); // the applied-state hashes are there (salted)
    capture('Redis keys and values', dump.text);

    // the emulator did get every planted secret, so the runs above really handled them
    const stored = emulator.store.allDeployments().flatMap((d) => d.secrets.map((s) => s.value));
    expect(stored).toEqual(
      expect.arrayContaining([PLANTED.envSecret, PLANTED.rotatedFileSecret, PLANTED.literalSecret]),
    );

    expect(captured.length).toBeGreaterThan(20);
    expect(hits()).toEqual([]);
  }, 120_000);
});
