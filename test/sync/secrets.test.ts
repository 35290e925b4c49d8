// No secret value and no API key at rest in Redis (every key, every type), in job payloads, or in apply's output.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { QUEUE_NAME } from '../../src/jobs/queue/jobs.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { deploymentYaml, manifestDir, runApplyCli, seedWith } from '../helpers/apply.js';
import { dropPrefix, keysUnder, rawRedis, REDIS_URL, testPrefix } from '../helpers/redis.js';

const PLANTED = {
  env: 'planted-env-value-a81c',
  file: 'planted-file-value-6d02',
  literal: 'planted-literal-value-f3b9',
  providerLiteral: 'planted-provider-literal-19e4',
  providerEnv: 'planted-provider-env-c7aa',
  apiKey: 'planted-api-key-5e61',
};

/** Every value stored under the prefix, whatever its type, as text. */
async function dumpAll(redis: Redis, prefix: string): Promise<{ keys: string[]; text: string }> {
  const keys = await keysUnder(redis, prefix);
  const parts: string[] = [];
  for (const key of keys) {
    const type = await redis.type(key);
    parts.push(key);
    if (type === 'string') parts.push(String(await redis.get(key)));
    else if (type === 'hash') parts.push(JSON.stringify(await redis.hgetall(key)));
    else if (type === 'list') parts.push(JSON.stringify(await redis.lrange(key, 0, -1)));
    else if (type === 'set') parts.push(JSON.stringify(await redis.smembers(key)));
    else if (type === 'zset') parts.push(JSON.stringify(await redis.zrange(key, 0, -1, 'WITHSCORES')));
    else if (type === 'stream') parts.push(JSON.stringify(await redis.xrange(key, '-', '+')));
    else throw new Error(`unexpected Redis type ${type} at ${key}`);
  }
  return { keys, text: parts.join('\n') };
}

describe('secrets never at rest', () => {
  let emulator: RunningEmulator;
  let tree: { dir: string; remove(): Promise<void> };
  const prefix = testPrefix('secrets');

  beforeAll(async () => {
    emulator = await startEmulator({ seed: seedWith([]), buildMs: 0, secrets: 'plain', apiKey: PLANTED.apiKey });
    tree = await manifestDir({});
    await writeFile(join(tree.dir, 'secret.txt'), `${PLANTED.file}\n`);
    const spec = [
      'source: external_docker',
      'source_revision_config:',
      '  image_uri: docker.io/acme/vault:1',
      'secrets:',
      '  - name: FROM_ENV',
      '    valueFrom: { env: PLANTED_ENV }',
      '  - name: FROM_FILE',
      `    valueFrom: { file: ${join(tree.dir, 'secret.txt')} }`,
      '  - name: LITERAL',
      `    value: ${PLANTED.literal}`,
    ].join('\n');
    await writeFile(join(tree.dir, 'vault.yaml'), deploymentYaml('vault', spec));
    const provider = (name: string, secret: string) =>
      [
        'apiVersion: converge/v1',
        'kind: OAuthProvider',
        'metadata:',
        `  name: ${name}`,
        'spec:',
        `  name: ${name}`,
        '  client_id: cid',
        `  client_secret: ${secret}`,
        '  auth_url: https://idp.example.com/a',
        '  token_url: https://idp.example.com/t',
        '',
      ].join('\n');
    await writeFile(join(tree.dir, 'literal-provider.yaml'), provider('lit', PLANTED.providerLiteral));
    await writeFile(join(tree.dir, 'env-provider.yaml'), provider('envp', '{ valueFrom: { env: PLANTED_PROVIDER } }'));
  });
  afterAll(async () => {
    await emulator.close();
    await tree.remove();
    await dropPrefix(prefix);
  });

  it('applies env, file and literal secrets, and none of them (nor the API key) is in Redis or the output', async () => {
    const env = { PLANTED_ENV: PLANTED.env, PLANTED_PROVIDER: PLANTED.providerEnv, CONVERGE_API_KEY: PLANTED.apiKey };
    const argv = [
      tree.dir,
      '--api-url',
      emulator.url,
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      prefix,
      '--allow-literal-secrets',
      '--log-level',
      'debug',
      '--backoff',
      '20ms',
    ];
    const run = await runApplyCli(argv, env);
    expect(run.stdout).toContain('Apply complete: 3 done');
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('job done');

    // the service got the real values (the literal from the manifests apply read, held in its memory only)
    const listed = await fetch(`${emulator.url}/v2/deployments?name_contains=vault`, {
      headers: { 'x-api-key': PLANTED.apiKey },
    });
    const vault = ((await listed.json()) as { resources: Array<{ secrets: Array<{ name: string; value: string }> }> })
      .resources[0]!;
    expect(Object.fromEntries(vault.secrets.map((s) => [s.name, s.value]))).toEqual({
      FROM_ENV: PLANTED.env,
      FROM_FILE: PLANTED.file,
      LITERAL: PLANTED.literal,
    });

    const redis = rawRedis();
    try {
      const { keys, text } = await dumpAll(redis, prefix);
      // the scan saw the applied state and the job payloads (the name of the environment variable is only in those)
      expect(keys).toContain(`${prefix}:applied`);
      expect(text).toContain('PLANTED_ENV');
      // the job, read through BullMQ: the literal travels as a pointer to its manifest, the references as references
      const queue = new Queue(QUEUE_NAME, { connection: redis, prefix });
      const vaultJobs = (await queue.getJobs(['completed'])).filter(
        (job) => (job.data as { key?: string }).key === 'Deployment/vault',
      );
      await queue.close();
      expect(vaultJobs).toHaveLength(1);
      const data = vaultJobs[0]!.data;
      expect(data.resource.spec.secrets.map((s: { from: unknown }) => s.from)).toEqual([
        { env: 'PLANTED_ENV' },
        { file: join(tree.dir, 'secret.txt') },
        { manifest: { file: 'vault.yaml', line: expect.any(Number), column: expect.any(Number) } },
      ]);
      const applied = JSON.parse((await redis.hget(`${prefix}:applied`, 'Deployment/vault'))!);
      expect(Object.values(applied.secrets)).toEqual([
        expect.stringMatching(/^[0-9a-f]{64}$/),
        expect.stringMatching(/^[0-9a-f]{64}$/),
        expect.stringMatching(/^[0-9a-f]{64}$/),
      ]);
      for (const value of Object.values(PLANTED)) expect(text).not.toContain(value);
    } finally {
      redis.disconnect();
    }
    for (const value of Object.values(PLANTED)) {
      expect(run.stdout).not.toContain(value);
      expect(run.stderr).not.toContain(value);
    }

    const again = await runApplyCli([...argv, '--output', 'json'], env);
    expect(again.code).toBe(0);
    for (const value of Object.values(PLANTED)) expect(again.stdout + again.stderr).not.toContain(value);
  });
});
