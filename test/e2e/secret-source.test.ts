// A secret moved to another source (issue 42, item 6): the applied record keeps each secret's source by name, and the next
// plan shows the move (valueFrom.env: OLD -> NEW, env -> file) in text, markdown and JSON, with no planted value in any
// output or in Redis; a record of an older converge (no sources) plans as before, with no source line.
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { appliedKey } from '../../src/store/applied-state.js';
import { dropPrefix, REDIS_URL, runConverge, tempDir, testPrefix, writeFiles } from './helpers.js';

const PLANTED = {
  first: 'planted-first-stripe-Qa81nT2',
  moved: 'planted-moved-stripe-Wd40kL7',
  token: 'planted-token-Hy62pX9',
  tokenFile: 'planted-token-file-Zr35vM4',
};

/** A deployment whose secrets STRIPE_API_KEY and TOKEN come from the sources given (as the manifest writes them). */
function manifest(stripe: string, token: string): string {
  return [
    'apiVersion: converge/v1',
    'kind: Deployment',
    'metadata:',
    '  name: billing',
    'spec:',
    '  source: external_docker',
    '  source_revision_config:',
    '    image_uri: docker.io/acme/billing:1',
    '  secrets:',
    '    - name: STRIPE_API_KEY',
    `      valueFrom: ${stripe}`,
    '    - name: TOKEN',
    `      valueFrom: ${token}`,
    '',
  ].join('\n');
}

interface JsonField {
  path: string;
  before: unknown;
  after: unknown;
  sensitive: boolean;
  source?: unknown;
}

describe('a secret moved to another source', () => {
  const prefix = testPrefix('secret-source');
  let emulator: RunningEmulator;
  let dir: string;
  let secretFile: string;
  const outputs: string[] = [];
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    // the service masks secret values: the plan compares with the applied record's hashes
    emulator = await startEmulator({ buildMs: 0 });
    dir = await tempDir('secret-source');
    secretFile = join(dir, '..', `${prefix.replace(/[^a-z0-9-]/gi, '')}-token`);
    await writeFile(secretFile, `${PLANTED.tokenFile}\n`);
    await writeFiles(dir, { 'billing.yaml': manifest('{ env: OLD_STRIPE_KEY }', '{ env: TOKEN_VALUE }') });
    env = {
      OLD_STRIPE_KEY: PLANTED.first,
      NEW_STRIPE_KEY: PLANTED.moved,
      TOKEN_VALUE: PLANTED.token,
      REDIS_URL,
      CONVERGE_REDIS_PREFIX: prefix,
      CONVERGE_API_URL: emulator.url,
    };
  }, 60_000);

  afterAll(async () => {
    await emulator?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
    if (secretFile) await rm(secretFile, { force: true });
    await dropPrefix(prefix);
  });

  async function plan(output: string): Promise<string> {
    const run = await runConverge(['plan', dir, '--output', output], env);
    expect(run.code, run.stderr).toBe(0);
    outputs.push(run.stdout + run.stderr);
    return run.stdout;
  }

  it('shows the source change by name in every output, never a value; an older record shows none', async () => {
    const applied = await runConverge(['apply', dir, '--backoff', '20ms'], env, 60_000);
    outputs.push(applied.stdout + applied.stderr);
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);

    // STRIPE_API_KEY moves to another variable (with another value), TOKEN from a variable to a file
    await writeFiles(dir, { 'billing.yaml': manifest('{ env: NEW_STRIPE_KEY }', `{ file: ${secretFile} }`) });
    const text = await plan('text');
    expect(text).toContain(
      [
        '      ~ secrets.STRIPE_API_KEY: (sensitive) -> (sensitive)',
        '          valueFrom.env: OLD_STRIPE_KEY -> NEW_STRIPE_KEY',
        '      ~ secrets.TOKEN: (sensitive) -> (sensitive)',
        `          valueFrom.env: TOKEN_VALUE -> valueFrom.file: ${secretFile}`,
      ].join('\n'),
    );
    const markdown = await plan('markdown');
    expect(markdown).toContain(
      [
        '- secrets.STRIPE_API_KEY: (sensitive) (valueFrom.env: OLD_STRIPE_KEY)',
        '+ secrets.STRIPE_API_KEY: (sensitive) (valueFrom.env: NEW_STRIPE_KEY)',
        '- secrets.TOKEN: (sensitive) (valueFrom.env: TOKEN_VALUE)',
        `+ secrets.TOKEN: (sensitive) (valueFrom.file: ${secretFile})`,
      ].join('\n'),
    );
    const json = JSON.parse(await plan('json')) as {
      changes: Array<{ name: string; action: string; fields: JsonField[] }>;
    };
    const billing = json.changes.find((c) => c.name === 'billing')!;
    expect(billing.action).toBe('update');
    expect(billing.fields).toEqual([
      {
        path: 'secrets.STRIPE_API_KEY',
        before: '(sensitive)',
        after: '(sensitive)',
        sensitive: true,
        source: { before: { env: 'OLD_STRIPE_KEY' }, after: { env: 'NEW_STRIPE_KEY' } },
      },
      {
        path: 'secrets.TOKEN',
        before: '(sensitive)',
        after: '(sensitive)',
        sensitive: true,
        source: { before: { env: 'TOKEN_VALUE' }, after: { file: secretFile } },
      },
    ]);

    // a saved plan keeps the source change, and shows it again
    const file = join(dir, '..', `${prefix.replace(/[^a-z0-9-]/gi, '')}-plan.json`);
    try {
      const saved = await runConverge(['plan', dir, '--out', file], env);
      expect(saved.code, saved.stderr).toBe(0);
      const shown = await runConverge(['plan', '--show', file], env);
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).toContain('          valueFrom.env: OLD_STRIPE_KEY -> NEW_STRIPE_KEY\n');
      outputs.push(saved.stdout + saved.stderr, shown.stdout + shown.stderr, await readFile(file, 'utf8'));
    } finally {
      await rm(file, { force: true });
    }

    // the record holds the sources by name; without them (a record an older converge wrote) the plan is as it was
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    try {
      const stored = JSON.parse((await redis.hget(appliedKey(prefix), 'Deployment/billing'))!) as {
        secretSources?: unknown;
      };
      expect(stored.secretSources).toEqual({
        STRIPE_API_KEY: { env: 'OLD_STRIPE_KEY' },
        TOKEN: { env: 'TOKEN_VALUE' },
      });
      outputs.push(JSON.stringify(await redis.hgetall(appliedKey(prefix))));
      delete stored.secretSources;
      await redis.hset(appliedKey(prefix), 'Deployment/billing', JSON.stringify(stored));
    } finally {
      redis.disconnect();
    }
    const older = await plan('text');
    expect(older).toContain(
      '      ~ secrets.STRIPE_API_KEY: (sensitive) -> (sensitive)\n      ~ secrets.TOKEN: (sensitive) -> (sensitive)\n',
    );
    expect(older).not.toContain('valueFrom');
    const olderJson = JSON.parse(await plan('json')) as { changes: Array<{ name: string; fields: JsonField[] }> };
    expect(olderJson.changes.find((c) => c.name === 'billing')!.fields.every((f) => f.source === undefined)).toBe(true);

    // the emulator did get the first values, so the outputs above had them at hand
    const live = emulator.store.allDeployments().find((d) => d.name === 'billing')!;
    expect(live.secrets.map((s) => s.value).sort()).toEqual([PLANTED.first, PLANTED.token].sort());
    for (const [name, value] of Object.entries(PLANTED)) {
      for (const out of outputs) expect(out.includes(value), `${name} in an output`).toBe(false);
    }
  }, 120_000);
});
