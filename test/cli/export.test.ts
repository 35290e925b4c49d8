// `converge export` against a realistic emulator state (both integrations, every source, masked secrets), then validate, plan and apply what it wrote.
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { runCapture } from '../helpers/cli.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

const STATE = fileURLToPath(new URL('../../examples/emulator-state.yaml', import.meta.url));

/** The variables export asks for, each set to a value of its own. */
function envFrom(stderr: string): NodeJS.ProcessEnv {
  const line = stderr.split('\n').find((l) => l.includes('set these environment variables'))!;
  const names = line.slice(line.indexOf(': ', line.indexOf('before plan or apply')) + 2).trim().split(' ');
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
    const texts = await Promise.all(files.filter((f) => f.endsWith('.yaml')).map((f) => readFile(join(out, f), 'utf8')));
    // every source kind, both integrations, the modeline and the take-over annotation; never a secret value
    for (const source of ['codehost', 'external_docker', 'internal_docker', 'internal_source', 'internal_template']) {
      expect(texts.some((t) => t.includes(`source: ${source}\n`))).toBe(true);
    }
    expect(texts.some((t) => t.includes('repository: acme/support-agent'))).toBe(true);
    expect(texts.some((t) => t.includes('repository: acme-labs/research-agent'))).toBe(true);
    expect(texts.every((t) => t.startsWith('# yaml-language-server: $schema=') && t.includes('converge/adopt: "true"'))).toBe(true);
    expect(texts.join('\n')).not.toMatch(/value:|\*\*\*\*|integration_id|repo_url|repo_commit_sha|custom_url|latest_revision_id|status:/);
    expect(exported.stderr).toContain('skipped Deployment/old-chatbot: being deleted');
    expect(exported.stderr).toContain('skipped Deployment/eval-harness: its live state makes no valid manifest');

    const validated = await runCapture(['validate', out], {});
    expect(validated.code, validated.stdout + validated.stderr).toBe(0);

    const env = envFrom(exported.stderr);
    expect(Object.keys(env)).toContain('SUPPORT_AGENT_OPENAI_API_KEY');
    const common = [out, '--api-url', emulator.url, '--redis-url', REDIS_URL, '--redis-prefix', prefix];
    const planned = await runCapture(['plan', ...common, '--output', 'json'], env);
    expect(planned.code, planned.stderr).toBe(0);
    const plan = JSON.parse(planned.stdout) as { summary: { blocked: number; create: number; delete: number; adopt: number };  changes: Array<{ name: string; kind: string; action: string; fields: Array<{ path: string; sensitive: boolean }> }>; diagnostics: unknown[] };
    expect(plan.diagnostics).toEqual([]);
    expect(plan.summary.blocked + plan.summary.create + plan.summary.delete).toBe(0);
    const declared = plan.changes.filter((c) => c.action !== 'orphan');
    expect(declared.length).toBe(files.length - 1 + 1);
    for (const change of declared) {
      expect(['adopt', 'noop', 'update'], `${change.kind}/${change.name}`).toContain(change.action);
      expect(change.fields.every((f) => f.sensitive), `${change.kind}/${change.name}: ${change.fields.map((f) => f.path).join(', ')}`).toBe(true);
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
      const forced = await runCapture(['export', '--out', target, '--force', '--api-url', emulator.url, '--name-prefix', 'support'], {});
      expect(forced.code).toBe(0);
      expect((await readdir(target)).filter((f) => f.endsWith('.yaml'))).toEqual(['support-agent.yaml']);
      const printed = await runCapture(['export', '--stdout', '--api-url', emulator.url, '--name-prefix', 'support'], {});
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
});
