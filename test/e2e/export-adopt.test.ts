// `converge export` adopts every live deployment as it is (issue 35): against the example state, through the built
// binary and `converge emulator` as a child, export writes a manifest for each one not being deleted, a plan of what
// it wrote changes nothing and blocks nothing, and only a re-create that needs a field the live state lacks is blocked.
import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  dropPrefix,
  REDIS_URL,
  ROOT,
  runConverge,
  spawnConverge,
  tempDir,
  testPrefix,
  until,
  type ConvergeChild,
} from './helpers.js';

const STATE = join(ROOT, 'examples', 'emulator-state.yaml');
const KEY = 'export-adopt-key-3b7f';
/** The deployments of the example state that lack graph_config_path live (two codehost, one internal_source with a tarball). */
const WITHOUT_GRAPH_CONFIG = ['eval-harness', 'legacy-etl', 'triage-bot'];

interface SeedDeployment {
  id?: string;
  name: string;
  tenant_id?: string;
  status?: string;
  is_preview?: boolean;
}

interface PlanJson {
  summary: Record<string, number>;
  changes: Array<{
    kind: string;
    name: string;
    action: string;
    reason: string | null;
    fields: Array<{ path: string; sensitive: boolean }>;
  }>;
  diagnostics: unknown[];
}

/** The names of the first workspace's deployments that are neither being deleted nor previews, read from the state file itself. */
async function adoptableNames(): Promise<string[]> {
  const state = parse(await readFile(STATE, 'utf8')) as {
    tenants: Array<{ id: string }>;
    deployments: SeedDeployment[];
  };
  const first = state.tenants[0]!.id;
  return state.deployments
    .filter((d) => (d.tenant_id ?? first) === first && d.status !== 'AWAITING_DELETE' && d.is_preview !== true)
    .map((d) => d.name)
    .sort();
}

/** The variables export asked for (the secret values), each set to a value of its own. */
function secretEnv(stderr: string): NodeJS.ProcessEnv {
  const line = stderr.split('\n').find((l) => l.includes('set these environment variables')) ?? '';
  const names = line
    .slice(line.lastIndexOf(': ') + 2)
    .trim()
    .split(' ')
    .filter(Boolean);
  return Object.fromEntries(names.map((name) => [name, `value-of-${name.toLowerCase()}`]));
}

describe('converge export adopts every live deployment as it is', () => {
  let emulator: ConvergeChild;
  let url: string;
  let out: string;
  const prefix = testPrefix('export-adopt');

  beforeAll(async () => {
    emulator = spawnConverge(['emulator', '--seed', STATE, '--api-key', KEY, '--build-ms', '100']);
    url = await until(
      'the emulator to listen',
      () => /emulator listening on (http:\/\/127\.0\.0\.1:\d+)\n/.exec(emulator.stderr())?.[1],
      20_000,
      50,
    );
    out = await tempDir('export-adopt');
  });
  afterAll(async () => {
    await emulator.kill('SIGTERM');
    await rm(out, { recursive: true, force: true });
    await dropPrefix(prefix);
  });

  it('writes a manifest for each, plans them clean, and blocks only the re-create that needs graph_config_path, naming it', async () => {
    const env = { CONVERGE_API_KEY: KEY };
    const exported = await runConverge(['export', '--out', out, '--api-url', url], env);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stderr).not.toContain('makes no valid manifest');
    const files = (await readdir(out))
      .filter((f) => f.endsWith('.yaml'))
      .map((f) => f.replace(/\.yaml$/, ''))
      .sort();
    expect(files).toEqual(await adoptableNames());
    for (const name of WITHOUT_GRAPH_CONFIG)
      expect(await readFile(join(out, `${name}.yaml`), 'utf8')).not.toContain('graph_config_path');

    const common = [out, '--api-url', url, '--redis-url', REDIS_URL, '--redis-prefix', prefix, '--output', 'json'];
    const secrets = secretEnv(exported.stderr);
    const planned = await runConverge(['plan', ...common], { ...env, ...secrets });
    expect(planned.code, planned.stderr).toBe(0);
    const plan = JSON.parse(planned.stdout) as PlanJson;
    expect(plan.diagnostics).toEqual([]);
    expect([plan.summary.create, plan.summary.update, plan.summary.blocked, plan.summary.delete]).toEqual([0, 0, 0, 0]);
    const declared = plan.changes.filter((c) => c.action !== 'orphan');
    for (const change of declared) {
      const what = `${change.kind}/${change.name}: ${change.action} ${change.fields.map((f) => f.path).join(', ')}`;
      // The only writes: each secret the service hides, sent once to take it over (docs/adopting-and-pruning.md).
      if (change.action === 'adopt')
        expect(change.fields.length > 0 && change.fields.every((f) => f.sensitive), what).toBe(true);
      else expect([change.action, change.fields], what).toEqual(['noop', []]);
    }
    for (const name of WITHOUT_GRAPH_CONFIG)
      expect(declared.find((c) => c.name === name)).toMatchObject({ action: 'noop', fields: [] });

    // Gone from the service, they are re-created from the same manifests: only those that need the field are blocked.
    const listed = (await (
      await fetch(`${url}/v2/deployments?limit=100`, { headers: { 'X-Api-Key': KEY } })
    ).json()) as { resources: Array<{ id: string; name: string }> };
    for (const name of WITHOUT_GRAPH_CONFIG) {
      const id = listed.resources.find((d) => d.name === name)!.id;
      const deleted = await fetch(`${url}/v2/deployments/${id}`, { method: 'DELETE', headers: { 'X-Api-Key': KEY } });
      expect(deleted.status).toBe(204);
    }
    await until(
      'the deletes to finish',
      async () => {
        const page = (await (
          await fetch(`${url}/v2/deployments?limit=100`, { headers: { 'X-Api-Key': KEY } })
        ).json()) as { resources: Array<{ name: string }> };
        return page.resources.every((d) => !WITHOUT_GRAPH_CONFIG.includes(d.name)) || undefined;
      },
      20_000,
      50,
    );
    const replanned = await runConverge(['plan', ...common], { ...env, ...secrets });
    expect(replanned.code, replanned.stderr).toBe(1); // a blocked change fails the plan (docs/commands.md)
    const again = JSON.parse(replanned.stdout) as PlanJson;
    const blocked = again.changes.filter((c) => c.action === 'blocked');
    expect(blocked.map((c) => c.name).sort()).toEqual(WITHOUT_GRAPH_CONFIG);
    for (const change of blocked)
      expect(change.reason, change.name).toContain(
        'needs source_revision_config.graph_config_path, which the manifest leaves out',
      );
    expect(again.summary.create).toBe(0);
  }, 120_000); // four converge processes beside the emulator: well over the default on a loaded 2-core machine
});
