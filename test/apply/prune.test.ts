// Adopt and prune through `converge apply`: real emulator on loopback, real Redis, jobs through BullMQ; lost DELETE answers and a fault soak.
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  startEmulator,
  type EmulatorOptions,
  type RequestLogEntry,
  type RunningEmulator,
} from '../../src/emulator/server.js';
import { runCapture } from '../helpers/cli.js';
import { prng } from '../helpers/prng.js';
import {
  deploymentYaml,
  externalDockerSpec,
  manifestDir,
  providerYaml,
  runApplyCli,
  seedWith,
} from '../helpers/apply.js';
import { lossyProxy } from '../helpers/lossy-proxy.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

function yamlOf(name: string, annotations: Record<string, string> = {}, maxScale = 1): string {
  const text = deploymentYaml(name, externalDockerSpec(`docker.io/acme/${name}:1`, maxScale));
  const lines = Object.entries(annotations).map(([k, v]) => `    ${k}: "${v}"`);
  return lines.length
    ? text.replace(`  name: ${name}\n`, `  name: ${name}\n  annotations:\n${lines.join('\n')}\n`)
    : text;
}

interface Setup {
  emulator: RunningEmulator;
  dir: string;
  args: (...extra: string[]) => string[];
  /** `converge plan` arguments (plan takes no job settings). */
  plan: (...extra: string[]) => string[];
  write(files: Record<string, string>): Promise<void>;
  remove(...names: string[]): Promise<void>;
  idOf(name: string): string | undefined;
  deletes(): RequestLogEntry[];
}

async function setup(
  label: string,
  files: Record<string, string>,
  options: EmulatorOptions = {},
  url?: (emulator: RunningEmulator) => Promise<string>,
): Promise<Setup> {
  const emulator = await startEmulator({ buildMs: 0, ...options });
  const tree = await manifestDir(files);
  const prefix = testPrefix(`prune-${label}`);
  cleanups.push(
    () => emulator.close(),
    () => tree.remove(),
    () => dropPrefix(prefix),
  );
  const target = url ? await url(emulator) : emulator.url;
  return {
    emulator,
    dir: tree.dir,
    args: (...extra) => [
      tree.dir,
      '--api-url',
      target,
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      prefix,
      '--concurrency',
      '4',
      '--backoff',
      '20ms',
      ...extra,
    ],
    plan: (...extra) => [
      'plan',
      tree.dir,
      '--api-url',
      target,
      '--redis-url',
      REDIS_URL,
      '--redis-prefix',
      prefix,
      ...extra,
    ],
    async write(more) {
      for (const [name, text] of Object.entries(more)) await writeFile(join(tree.dir, name), text);
    },
    async remove(...names) {
      for (const name of names) await rm(join(tree.dir, `${name}.yaml`));
    },
    idOf: (name) => emulator.store.allDeployments().find((d) => d.name === name && d.status !== 'AWAITING_DELETE')?.id,
    // DELETEs of a deployment that landed (the probe's random id answers 404 and is left out).
    deletes: () => emulator.requestLog.filter((e) => e.method === 'DELETE' && e.status === 204),
  };
}

const FOREIGN = seedWith([
  {
    name: 'foreign',
    source: 'external_docker',
    source_config: { resource_spec: { max_scale: 1 } },
    source_revision_config: { image_uri: 'docker.io/acme/foreign:1' },
  },
]);

describe.concurrent('prune', () => {
  it('deletes exactly the owned, undeclared deployments, by id; never an unowned one, nor one kept by converge/prune: "false"', async () => {
    const s = await setup(
      'exact',
      {
        'a.yaml': yamlOf('a'),
        'b.yaml': yamlOf('b'),
        'c.yaml': yamlOf('c'),
        'kept.yaml': yamlOf('kept', { 'converge/prune': 'false' }),
      },
      { seed: FOREIGN },
    );
    expect((await runApplyCli(s.args(), {})).code).toBe(0);
    const ids = { b: s.idOf('b')!, c: s.idOf('c')! };
    await s.remove('b', 'c', 'kept');

    const dry = await runCapture(s.plan('--detailed-exitcode'), {});
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(
      'Deployment/b is no longer declared: converge owns it and its manifest is gone; converge apply --prune deletes it',
    );
    expect(dry.stdout).not.toContain('Deployment/b is no longer declared; converge stopped managing it');
    const planned = await runCapture(s.plan('--prune', '--detailed-exitcode'), {});
    expect(planned.code).toBe(2);
    expect(planned.stdout).toContain('- delete Deployment/b (owned by converge, no longer declared)');
    expect(planned.stdout).toContain('- delete Deployment/c (owned by converge, no longer declared)');
    expect(planned.stdout).not.toContain('delete Deployment/foreign');
    expect(planned.stdout).not.toContain('delete Deployment/kept');
    expect(s.deletes()).toEqual([]);

    const applied = await runApplyCli(s.args('--prune'), {});
    expect(applied.code).toBe(0);
    expect(applied.stdout).toMatch(/done +Deployment\/b: deleted/);
    expect(
      s
        .deletes()
        .map((e) => e.deploymentId)
        .sort(),
    ).toEqual([ids.b, ids.c].sort());
    expect(s.deletes().every((e) => e.query.delete_tracing_project === undefined)).toBe(true);
    expect(['a', 'foreign', 'kept'].every((name) => s.idOf(name) !== undefined)).toBe(true);
    expect(s.idOf('b')).toBeUndefined();
    // Nothing left to delete: a second run sends no DELETE.
    const again = await runApplyCli(s.args('--prune'), {});
    expect(again.code).toBe(0);
    expect(s.deletes()).toHaveLength(2);
  });

  it('guards: an empty manifest directory deletes nothing, nor does a run above --max-deletes; each says why', async () => {
    const s = await setup('guards', { 'a.yaml': yamlOf('a'), 'b.yaml': yamlOf('b'), 'c.yaml': yamlOf('c') });
    expect((await runApplyCli(s.args(), {})).code).toBe(0);
    await s.remove('a', 'b', 'c');
    // A refused prune is not success: apply exits 1, not converged, with the reason; plan never says "no changes".
    const empty = await runApplyCli(s.args('--prune'), {});
    expect(empty.code).toBe(1);
    expect(empty.stdout).toContain(
      'the manifest directory yields no resources at all, and an empty checkout or a wrong path must not delete a workspace',
    );
    expect(empty.stdout).toMatch(
      /Apply incomplete: 0 done, 0 unchanged, 0 failed; not converged \(prune refused, nothing is deleted: the manifest directory yields no resources at all/,
    );
    expect(empty.stdout).not.toContain('Live state matches the manifests');
    const emptyPlan = await runCapture(s.plan('--prune', '--detailed-exitcode'), {});
    expect(emptyPlan.code).toBe(1);
    expect(emptyPlan.stdout).not.toContain('No changes');
    expect(emptyPlan.stdout).toContain('Prune refused: nothing is deleted (see the note on prune).');
    expect(s.deletes()).toEqual([]);

    await s.write({ 'a.yaml': yamlOf('a') });
    const over = await runApplyCli(s.args('--prune', '--max-deletes', '1'), {});
    expect(over.code).toBe(1);
    expect(over.stdout).toContain('it would delete 2 resources, more than --max-deletes 1');
    expect(over.stdout).toContain('not converged (prune refused, nothing is deleted: it would delete 2 resources');
    expect((await runCapture(s.plan('--prune', '--max-deletes', '1', '--detailed-exitcode'), {})).code).toBe(1);
    expect(s.deletes()).toEqual([]);
    const within = await runApplyCli(s.args('--prune', '--max-deletes', '2'), {});
    expect(within.code).toBe(0);
    expect(s.deletes()).toHaveLength(2);
  });

  it('an emptied file is not a removal: validate and plan warn at file:line:column, apply --prune exits 1 naming it and sends no DELETE; removed, it is pruned at once', async () => {
    const s = await setup('emptied', { 'a.yaml': yamlOf('a'), 'b.yaml': yamlOf('b') });
    expect((await runApplyCli(s.args(), {})).code).toBe(0);
    const id = s.idOf('b')!;
    await s.write({ 'b.yaml': '# being rewritten\n---\n' });
    const validated = await runCapture(['validate', s.dir], {});
    expect(validated.code).toBe(0);
    expect(validated.stdout + validated.stderr).toContain('b.yaml:1:1');
    expect(validated.stdout + validated.stderr).toContain('declares nothing; delete the file to remove its resources');
    const planned = await runCapture(s.plan('--prune'), {});
    expect(planned.code).toBe(1);
    expect(planned.stdout).toContain('declares nothing; delete the file to remove its resources');
    expect(planned.stdout).toContain('prune refused, nothing is deleted: b.yaml:1:1 declares nothing');
    expect(planned.stdout).not.toContain('- delete Deployment/b');
    const applied = await runApplyCli(s.args('--prune'), {});
    expect(applied.code).toBe(1);
    expect(applied.stdout).toContain('prune refused, nothing is deleted: b.yaml:1:1 declares nothing');
    // Not even the probe for the DELETE endpoint: no DELETE of any id.
    expect(s.emulator.requestLog.filter((e) => e.method === 'DELETE')).toEqual([]);
    expect(s.idOf('b')).toBe(id);

    await s.remove('b');
    const removed = await runApplyCli(s.args('--prune'), {});
    expect(removed.code).toBe(0);
    expect(s.deletes().map((e) => e.deploymentId)).toEqual([id]);
    expect(s.idOf('a')).toBeDefined();
  });

  it('adopt: explicit blocks a take-over without converge/adopt, allows it with; an adopted deployment is owned, so prune deletes it', async () => {
    const s = await setup(
      'adopt',
      { 'foreign.yaml': yamlOf('foreign', {}, 3), 'a.yaml': yamlOf('a') },
      { seed: FOREIGN },
    );
    const refused = await runApplyCli(s.args('--adopt', 'explicit'), {});
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain('! blocked Deployment/foreign: Deployment/foreign exists on the service');
    expect(refused.stdout).toContain('converge/adopt: "true"');
    expect(s.emulator.requestLog.filter((e) => e.method === 'PATCH')).toEqual([]);

    const auto = await runCapture(s.plan('--output', 'json'), {});
    expect(JSON.parse(auto.stdout).changes.find((c: { name: string }) => c.name === 'foreign')).toMatchObject({
      action: 'adopt',
    });
    await s.write({ 'foreign.yaml': yamlOf('foreign', { 'converge/adopt': 'true' }, 3) });
    const taken = await runApplyCli(s.args('--adopt', 'explicit'), {});
    expect(taken.code).toBe(0);
    expect(s.emulator.requestLog.filter((e) => e.method === 'PATCH' && e.status === 200)).toHaveLength(1);
    // Owned now: a further change is an update, and its manifest's removal makes it a delete.
    await s.write({ 'foreign.yaml': yamlOf('foreign', {}, 4) });
    const next = JSON.parse((await runCapture(s.plan('--output', 'json', '--adopt', 'explicit'), {})).stdout);
    expect(next.changes.find((c: { name: string }) => c.name === 'foreign')).toMatchObject({ action: 'update' });
    const id = s.idOf('foreign')!;
    await s.remove('foreign');
    expect((await runApplyCli(s.args('--prune'), {})).code).toBe(0);
    expect(s.deletes().map((e) => e.deploymentId)).toEqual([id]);
  });

  it('a lost DELETE answer deletes nothing twice, and never the deployment that took the name in between', async () => {
    let lost = false;
    let emulatorRef: RunningEmulator | undefined;
    let taker: Promise<unknown> | undefined;
    const s = await setup(
      'lost',
      { 'a.yaml': yamlOf('a'), 'b.yaml': yamlOf('b') },
      {
        // Once the DELETE of b landed (gone at once, with its tracing project), someone creates a new b.
        onRequest: (entry) => {
          if (entry.method !== 'DELETE' || entry.status !== 204 || taker) return;
          taker = fetch(`${emulatorRef!.url}/v2/deployments`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              name: 'b',
              source: 'external_docker',
              source_config: {},
              source_revision_config: { image_uri: 'docker.io/other/b:9' },
              secrets: [],
            }),
          });
        },
      },
      async (emulator) => {
        emulatorRef = emulator;
        const proxy = await lossyProxy(emulator.url, {
          loseAnswer: (method, path) => {
            if (method !== 'DELETE' || lost) return false;
            // The probe sends a random id first; lose the answer of the first DELETE of a deployment that exists.
            const id = decodeURIComponent(path.split('/').pop()!.split('?')[0]!);
            if (!emulator.store.allDeployments().some((d) => d.id === id)) return false;
            lost = true;
            return true;
          },
        });
        cleanups.push(() => proxy.close());
        return proxy.url;
      },
    );
    expect((await runApplyCli(s.args(), {})).code).toBe(0);
    const oldB = s.idOf('b')!;
    await s.remove('b');
    const run = await runApplyCli(s.args('--prune', '--prune-tracing-projects', '--attempts', '4'), {});
    await taker;
    expect(lost).toBe(true);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('the answer to an earlier attempt was lost; the service shows its delete landed');
    expect(s.deletes().map((e) => e.deploymentId)).toEqual([oldB]);
    expect(s.deletes()[0]!.query.delete_tracing_project).toBe('true');
    const newB = s.idOf('b');
    expect(newB).toBeDefined();
    expect(newB).not.toBe(oldB);
    // The new b is not converge's: never planned as a delete.
    const after = JSON.parse((await runCapture(s.plan('--prune', '--output', 'json'), {})).stdout);
    expect(after.changes.find((c: { name: string }) => c.name === 'b')).toMatchObject({ action: 'orphan' });
  });

  it('providers follow the same rules: an owned provider whose manifest is gone is deleted by provider_id; one converge does not own is never', async () => {
    const seed = {
      ...seedWith([]),
      providers: [
        {
          provider_id: 'entra',
          name: 'Entra',
          client_id: 'theirs',
          auth_url: 'https://login.example.com/authorize',
          token_url: 'https://login.example.com/token',
          client_secret: 'theirs',
        },
      ],
    };
    const env = { SLACK_SECRET: 'planted-slack-4e1a', GITHUB_SECRET: 'planted-github-9b2c' };
    const s = await setup(
      'providers',
      {
        'a.yaml': yamlOf('a'),
        'slack.yaml': providerYaml('slack', 'SLACK_SECRET'),
        'github.yaml': providerYaml('github', 'GITHUB_SECRET'),
      },
      { seed },
    );
    expect((await runApplyCli(s.args(), env)).code).toBe(0);
    await rm(join(s.dir, 'github.yaml'));
    const planned = await runCapture(s.plan('--prune'), env);
    expect(planned.stdout).toContain('- delete OAuthProvider/github (owned by converge, no longer declared)');
    expect(planned.stdout).not.toContain('OAuthProvider/entra');
    const run = await runApplyCli(s.args('--prune'), env);
    expect(run.code, run.stdout).toBe(0);
    const deletes = s.emulator.requestLog.filter((e) => e.method === 'DELETE' && e.status === 204).map((e) => e.path);
    expect(deletes).toEqual(['/v2/auth/providers/github']);
    expect(
      s.emulator.store
        .providers()
        .map((p) => p.provider_id)
        .sort(),
    ).toEqual(['entra', 'slack']);
    expect(run.stdout).not.toContain(env.GITHUB_SECRET);
  });

  it('fault soak with prune on: 503s, resets and lost answers from the start; exactly the undeclared owned ones deleted, each once', async () => {
    const names = ['s1', 's2', 's3', 's4', 's5', 's6'];
    const files = Object.fromEntries(names.map((n) => [`${n}.yaml`, yamlOf(n)]));
    // The random faults meet whichever requests the interleaving gives them; the proxy makes sure deletes meet one too:
    // the answer to the first DELETE of each existing deployment is lost after the delete landed.
    const lostDeletes = new Set<string>();
    const s = await setup(
      'soak',
      files,
      { seed: FOREIGN, buildMs: 100, failRate: 0.15, resetRate: 0.05, lostResponseRate: 0.15, random: prng(15) },
      async (emulator) => {
        const proxy = await lossyProxy(emulator.url, {
          loseAnswer: (method, path) => {
            if (method !== 'DELETE') return false;
            const id = decodeURIComponent(path.split('/').pop()!.split('?')[0]!);
            if (lostDeletes.has(id) || !emulator.store.allDeployments().some((d) => d.id === id)) return false;
            lostDeletes.add(id);
            return true;
          },
        });
        cleanups.push(() => proxy.close());
        return proxy.url;
      },
    );
    const converge = async (...extra: string[]): Promise<boolean> => {
      for (let round = 0; round < 8; round++) {
        const run = await runApplyCli(s.args('--attempts', '6', ...extra), {});
        const plan = await runCapture(s.plan('--output', 'json', ...extra), {});
        if (run.code !== 0 || plan.code !== 0) continue;
        const summary = JSON.parse(plan.stdout).summary;
        if (summary.create + summary.update + summary.adopt + summary.delete === 0) return true;
      }
      return false;
    };
    expect(await converge()).toBe(true);
    const ids = Object.fromEntries(names.map((n) => [n, s.idOf(n)!]));
    const gone = ['s2', 's4', 's6'];
    await s.remove(...gone);
    expect(await converge('--prune')).toBe(true);
    // The faults met the deletes too: each delete's first answer was lost (and the random faults met some of them).
    expect([...lostDeletes].sort()).toEqual(gone.map((n) => ids[n]!).sort());
    const landed = s.deletes().map((e) => e.deploymentId!);
    expect(landed.sort()).toEqual(gone.map((n) => ids[n]!).sort());
    for (const n of ['s1', 's3', 's5']) expect(s.idOf(n)).toBe(ids[n]);
    expect(s.idOf('foreign')).toBeDefined();
  });
});
