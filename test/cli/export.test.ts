// `converge export` against a realistic emulator state (both integrations, every source, masked secrets), then validate, plan and apply what it wrote.
import { cp, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { runCapture } from '../helpers/cli.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

const STATE = fileURLToPath(new URL('../../examples/emulator-state.yaml', import.meta.url));

/** The variables export asks for, each set to a value of its own. */
function envFrom(stderr: string): NodeJS.ProcessEnv {
  const line = stderr.split('\n').find((l) => l.includes('set these environment variables'))!;
  const names = line
    .slice(line.indexOf(': ', line.indexOf('before plan or apply')) + 2)
    .trim()
    .split(' ');
  return Object.fromEntries(names.map((name) => [name, `value-of-${name.toLowerCase()}`]));
}

describe('converge export', () => {
  let emulator: RunningEmulator;
  let out: string;
  const prefix = testPrefix('export');

  beforeAll(async () => {
    emulator = await startEmulator({ seedFile: STATE, buildMs: 50 });
    out = await mkdtemp(join(tmpdir(), 'converge-export-'));
  });
  afterAll(async () => {
    await emulator.close();
    await rm(out, { recursive: true, force: true });
    await dropPrefix(prefix);
  });

  it('writes manifests that validate and plan as secret writes only, then apply adopts them all and nothing is left to change', async () => {
    const exported = await runCapture(['export', '--out', out, '--api-url', emulator.url], {});
    expect(exported.code, exported.stderr).toBe(0);
    const files = (await readdir(out)).sort();
    expect(files).toContain('providers');
    const texts = await Promise.all(
      files.filter((f) => f.endsWith('.yaml')).map((f) => readFile(join(out, f), 'utf8')),
    );
    // every source kind, both integrations, the modeline and the take-over annotation; never a secret value
    for (const source of ['codehost', 'external_docker', 'internal_docker', 'internal_source', 'internal_template']) {
      expect(texts.some((t) => t.includes(`source: ${source}\n`))).toBe(true);
    }
    expect(texts.some((t) => t.includes('repository: acme/support-agent'))).toBe(true);
    expect(texts.some((t) => t.includes('repository: acme-labs/research-agent'))).toBe(true);
    expect(
      texts.every((t) => t.startsWith('# yaml-language-server: $schema=') && t.includes('converge/adopt: "true"')),
    ).toBe(true);
    expect(texts.join('\n')).not.toMatch(
      /value:|\*\*\*\*|integration_id|repo_url|repo_commit_sha|custom_url|latest_revision_id|status:/,
    );
    expect(exported.stderr).toContain('skipped Deployment/old-chatbot: being deleted');
    expect(exported.stderr).not.toContain('makes no valid manifest');

    const validated = await runCapture(['validate', out], {});
    expect(validated.code, validated.stdout + validated.stderr).toBe(0);

    const env = envFrom(exported.stderr);
    expect(Object.keys(env)).toContain('SUPPORT_AGENT_OPENAI_API_KEY');
    const common = [out, '--api-url', emulator.url, '--redis-url', REDIS_URL, '--redis-prefix', prefix];
    const planned = await runCapture(['plan', ...common, '--output', 'json'], env);
    expect(planned.code, planned.stderr).toBe(0);
    const plan = JSON.parse(planned.stdout) as {
      summary: { blocked: number; create: number; delete: number; adopt: number };
      changes: Array<{
        name: string;
        kind: string;
        action: string;
        fields: Array<{ path: string; sensitive: boolean }>;
      }>;
      diagnostics: unknown[];
    };
    expect(plan.diagnostics).toEqual([]);
    expect(plan.summary.blocked + plan.summary.create + plan.summary.delete).toBe(0);
    const declared = plan.changes.filter((c) => c.action !== 'orphan');
    // Every manifest file (the providers folder holds one provider) and nothing else: the schema file is not one.
    expect(declared.length).toBe(files.filter((f) => f.endsWith('.yaml')).length + 1);
    for (const change of declared) {
      expect(['adopt', 'noop', 'update'], `${change.kind}/${change.name}`).toContain(change.action);
      expect(
        change.fields.every((f) => f.sensitive),
        `${change.kind}/${change.name}: ${change.fields.map((f) => f.path).join(', ')}`,
      ).toBe(true);
    }
    expect(plan.summary.adopt).toBeGreaterThan(0);
    expect(planned.stdout).not.toContain('value-of-');

    const applied = await runCapture(['apply', ...common, '--backoff', '20ms'], env);
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);
    const after = await runCapture(['plan', ...common, '--detailed-exitcode'], env);
    expect(after.code, after.stdout).toBe(0);
  });

  it('refuses to overwrite without --force (nothing written), overwrites with it, and --stdout prints the same documents', async () => {
    const target = await mkdtemp(join(tmpdir(), 'converge-export-force-'));
    try {
      await writeFile(join(target, 'support-agent.yaml'), 'mine\n');
      const refused = await runCapture(['export', '--out', target, '--api-url', emulator.url], {});
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('support-agent.yaml');
      expect(refused.stderr).toContain('give --force to overwrite them');
      expect(await readdir(target)).toEqual(['support-agent.yaml']);
      expect(await readFile(join(target, 'support-agent.yaml'), 'utf8')).toBe('mine\n');
      const forced = await runCapture(
        ['export', '--out', target, '--force', '--api-url', emulator.url, '--name-prefix', 'support'],
        {},
      );
      expect(forced.code).toBe(0);
      expect((await readdir(target)).filter((f) => f.endsWith('.yaml'))).toEqual(['support-agent.yaml']);
      const printed = await runCapture(
        ['export', '--stdout', '--api-url', emulator.url, '--name-prefix', 'support'],
        {},
      );
      expect(printed.code).toBe(0);
      expect(printed.stdout).toContain('name: support-agent');
      expect(printed.stdout.split('\n---\n').length).toBeGreaterThanOrEqual(2);
      const neither = await runCapture(['export', '--api-url', emulator.url], {});
      expect(neither.code).toBe(1);
      expect(neither.stderr).toContain('give either --out DIR or --stdout');
    } finally {
      await rm(target, { recursive: true, force: true });
    }
  });

  it('writes the schema beside the files, and every modeline points at it by a path that works wherever the directory is committed', async () => {
    const first = await mkdtemp(join(tmpdir(), 'converge-export-schema-'));
    const moved = await mkdtemp(join(tmpdir(), 'converge-export-moved-'));
    try {
      const exported = await runCapture(['export', '--out', first, '--api-url', emulator.url], {});
      expect(exported.code, exported.stderr).toBe(0);
      // Committed elsewhere: the directory copied to another place, far from converge's own clone.
      await cp(first, join(moved, 'repo', 'manifests'), { recursive: true });
      const root = join(moved, 'repo', 'manifests');
      const schemaText = (await runCapture(['schema'], {})).stdout;
      expect(await readFile(join(root, 'converge.schema.json'), 'utf8')).toBe(schemaText);
      const yamls = [
        ...(await readdir(root)).filter((f) => f.endsWith('.yaml')),
        ...(await readdir(join(root, 'providers'))).map((f) => join('providers', f)),
      ];
      expect(yamls.length).toBeGreaterThan(5);
      for (const file of yamls) {
        const text = await readFile(join(root, file), 'utf8');
        const ref = /^# yaml-language-server: \$schema=(\S+)\n/.exec(text)![1]!;
        expect(ref, file).not.toContain('schema/converge.schema.json');
        expect(await readFile(resolve(dirname(join(root, file)), ref), 'utf8'), file).toBe(schemaText);
      }
      expect(
        await readFile(
          join(root, 'providers', yamls.find((f) => f.startsWith('providers'))!.slice('providers/'.length)),
          'utf8',
        ),
      ).toMatch(/^# yaml-language-server: \$schema=\.\.\/converge\.schema\.json\n/);

      // Exported again over the same directory (--force): the schema, the same text, is no conflict.
      expect((await runCapture(['export', '--out', first, '--force', '--api-url', emulator.url], {})).code).toBe(0);
      // A converge.schema.json that is not this schema is a file of the user's: not overwritten without --force.
      const other = await mkdtemp(join(tmpdir(), 'converge-export-other-'));
      try {
        await writeFile(join(other, 'converge.schema.json'), '{"mine": true}\n');
        const refused = await runCapture(['export', '--out', other, '--api-url', emulator.url], {});
        expect(refused.code).toBe(1);
        expect(refused.stderr).toContain('converge.schema.json');
        expect(await readFile(join(other, 'converge.schema.json'), 'utf8')).toBe('{"mine": true}\n');
      } finally {
        await rm(other, { recursive: true, force: true });
      }

      // --schema-ref: every modeline names it, and no schema file is written.
      const referenced = await mkdtemp(join(tmpdir(), 'converge-export-ref-'));
      try {
        const url = 'https://schemas.example.com/converge/v1/converge.schema.json';
        expect(
          (
            await runCapture(
              [
                'export',
                '--out',
                referenced,
                '--schema-ref',
                url,
                '--api-url',
                emulator.url,
                '--name-prefix',
                'support',
              ],
              {},
            )
          ).code,
        ).toBe(0);
        expect(await readdir(referenced)).not.toContain('converge.schema.json');
        expect(await readFile(join(referenced, 'support-agent.yaml'), 'utf8')).toMatch(
          new RegExp(`^# yaml-language-server: \\$schema=${url.replace(/[.]/g, '\\.')}\n`),
        );
      } finally {
        await rm(referenced, { recursive: true, force: true });
      }
      const printed = await runCapture(
        ['export', '--stdout', '--api-url', emulator.url, '--name-prefix', 'support'],
        {},
      );
      expect(printed.stdout).toMatch(/^# yaml-language-server: \$schema=converge\.schema\.json\n/);
      expect(printed.stderr).toContain('save it there with "converge schema > converge.schema.json"');
    } finally {
      await rm(first, { recursive: true, force: true });
      await rm(moved, { recursive: true, force: true });
    }
  });
});
