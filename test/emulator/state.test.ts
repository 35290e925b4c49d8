// State files: seeding, atomic persistence of every change, reload, no secret values at rest, the example organization.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { createPersister, writeFileAtomic } from '../../src/emulator/persist.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { baseSeed, client, codehostBody, dockerBody, manualClock, until } from './helpers.js';

let dir: string;
const opened: RunningEmulator[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'converge-emulator-'));
});

afterEach(async () => {
  await Promise.all(opened.splice(0).map((e) => e.close()));
  await rm(dir, { recursive: true, force: true });
});

async function open(options: Parameters<typeof startEmulator>[0]): Promise<RunningEmulator> {
  const emulator = await startEmulator({ buildMs: 0, ...options });
  opened.push(emulator);
  return emulator;
}

async function closeAll(): Promise<void> {
  await Promise.all(opened.splice(0).map((e) => e.close()));
}

describe('persistence', () => {
  test('handed-out tarball paths and the revision metadata of a PATCH survive a restart from the state file', async () => {
    const file = join(dir, 'state.yaml');
    const api = client(await open({ stateFile: file, seed: baseSeed() }));
    const created = await api.call('POST', '/v2/deployments', {
      name: 'up',
      source: 'internal_source',
      source_config: { deployment_type: 'dev' },
      source_revision_config: {},
      secrets: [],
    });
    const url = await api.call('POST', `/v2/deployments/${created.body.id}/upload-url`);
    expect((await fetch(url.body.upload_url, { method: 'PUT', body: 'x' })).status).toBe(200);
    // A signed URL takes one PUT.
    expect((await fetch(url.body.upload_url, { method: 'PUT', body: 'x' })).status).toBe(403);
    const patched = await api.call('PATCH', `/v2/deployments/${created.body.id}`, {
      revision_source: 'internal_source',
      source_revision_config: { source_tarball_path: url.body.object_path, graph_config_path: 'langgraph.json' },
      tracked_packages: ['langgraph:>=0.3'],
    });
    expect(patched.status).toBe(200);
    const saved = parseYaml(await readFile(file, 'utf8'));
    expect(saved.uploads).toEqual([
      { object_path: url.body.object_path, deployment_id: created.body.id, uploaded: true },
    ]);
    expect(saved.deployments[0].revisions[0]).toMatchObject({
      revision_source: 'internal_source',
      tracked_packages: ['langgraph:>=0.3'],
    });
    await closeAll();
    const again = client(await open({ stateFile: file }));
    const second = await again.call('POST', `/v2/deployments/${created.body.id}/upload-url`);
    // The first path is still the service's; a path from nowhere still is not.
    expect(
      (
        await again.call('PATCH', `/v2/deployments/${created.body.id}`, {
          source_revision_config: { source_tarball_path: url.body.object_path },
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await again.call('PATCH', `/v2/deployments/${created.body.id}`, {
          source_revision_config: { source_tarball_path: 'uploads/x.tgz' },
        })
      ).status,
    ).toBe(400);
    expect(second.body.object_path).not.toBe(url.body.object_path);
    const revision = (
      await again.call('GET', `/v2/deployments/${created.body.id}/revisions?limit=5`)
    ).body.resources.at(-1);
    expect(revision).toMatchObject({ source: 'internal_source', tracked_packages: ['langgraph:>=0.3'] });
  });

  test('every change reaches the state file; a restart from it restores the state; no temp file is left', async () => {
    const file = join(dir, 'state.yaml');
    const first = await open({ stateFile: file, seed: baseSeed(), secrets: 'plain' });
    const api = client(first);
    // The fresh file is written at start.
    expect(parseYaml(await readFile(file, 'utf8')).integrations).toHaveLength(2);
    const created = await api.call(
      'POST',
      '/v2/deployments',
      codehostBody('support-agent', { secrets: [{ name: 'OPENAI_API_KEY', value: 'sk-live-abcdef' }] }),
    );
    await api.call('PATCH', `/v2/deployments/${created.body.id}`, {
      source_config: { resource_spec: { max_scale: 4 } },
    });
    await api.call('POST', '/v2/auth/providers', {
      provider_id: 'slack',
      name: 'Slack',
      client_id: 'c',
      client_secret: 'slack-client-secret',
      auth_url: 'https://a',
      token_url: 'https://t',
    });
    // Each answer comes after its write: the file already holds everything.
    const text = await readFile(file, 'utf8');
    const saved = parseYaml(text);
    expect(saved.deployments.map((d: { name: string }) => d.name)).toEqual(['support-agent']);
    expect(saved.deployments[0].source_config.resource_spec).toEqual({ max_scale: 4 });
    expect(saved.deployments[0].revisions).toHaveLength(2);
    expect(saved.providers.map((p: { provider_id: string }) => p.provider_id)).toEqual(['slack']);
    expect(text).not.toContain('sk-live-abcdef');
    expect(text).not.toContain('slack-client-secret');
    expect(await readdir(dir)).toEqual(['state.yaml']);
    const before = (await api.call('GET', '/v2/deployments')).body.resources[0];
    await closeAll();

    const second = await open({ stateFile: file, secrets: 'plain' });
    const again = client(second);
    const after = (await again.call('GET', '/v2/deployments')).body.resources[0];
    // Everything but the secret value survives: only its hash was persisted, so plain mode masks it now.
    expect({ ...after, secrets: undefined }).toEqual({ ...before, secrets: undefined });
    expect(before.secrets).toEqual([{ name: 'OPENAI_API_KEY', value: 'sk-live-abcdef' }]);
    expect(after.secrets).toEqual([{ name: 'OPENAI_API_KEY', value: '********' }]);
    expect(
      (
        await again.call('POST', '/v2/auth/providers', {
          provider_id: 'slack',
          name: 'S',
          client_id: 'c',
          auth_url: 'a',
          token_url: 't',
        })
      ).status,
    ).toBe(409);
    expect((await again.call('POST', '/v2/deployments', dockerBody('support-agent'))).status).toBe(409);
    expect(
      second.store
        .tracingProjects()
        .map((p) => p.name)
        .sort(),
    ).toEqual(['support-agent', 'taken-by-tracing']);
  });

  test('JSON state files for .json paths; a pending build survives a restart and then activates', async () => {
    const file = join(dir, 'state.json');
    // The emulator's clock moves only when the test moves it: the build is pending however slow the machine is.
    const clock = manualClock();
    const first = await open({ stateFile: file, seed: baseSeed(), buildMs: 300, clock: clock.now });
    const created = await client(first).call('POST', '/v2/deployments', dockerBody('slow'));
    expect(created.body.status).toBe('AWAITING_DATABASE');
    const saved = JSON.parse(await readFile(file, 'utf8'));
    expect(typeof saved.deployments[0].build_ready_at).toBe('string');
    await closeAll();
    const second = await open({ stateFile: file, buildMs: 300, clock: clock.now });
    const api = client(second);
    expect((await api.call('GET', '/v2/deployments')).body.resources[0].status).toBe('AWAITING_DATABASE');
    clock.advance(300);
    const ready = await until('the build to finish', async () => {
      const d = (await api.call('GET', '/v2/deployments')).body.resources[0];
      return d.status === 'READY' ? d : undefined;
    });
    expect(ready.active_revision_id).toBe(created.body.latest_revision_id);
    await until('the state file to show the build done', async () =>
      JSON.parse(await readFile(file, 'utf8')).deployments[0].build_ready_at === null ? true : undefined,
    );
  });

  test('bursts of concurrent changes coalesce and all reach the file', async () => {
    const file = join(dir, 'state.yaml');
    const emulator = await open({ stateFile: file, seed: baseSeed() });
    const api = client(emulator);
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => api.call('POST', '/v2/deployments', dockerBody(`app-${i}`))),
    );
    expect(answers.every((a) => a.status === 201)).toBe(true);
    expect(parseYaml(await readFile(file, 'utf8')).deployments).toHaveLength(30);
    expect(await readdir(dir)).toEqual(['state.yaml']);
  });

  test('an existing state file wins over the seed; a seed file is never written', async () => {
    const seedFile = join(dir, 'seed.yaml');
    const seedText = 'deployments:\n  - name: from-seed\n    source: internal_template\n';
    await writeFile(seedFile, seedText);
    const stateFile = join(dir, 'state.yaml');
    const first = await open({ stateFile, seedFile });
    await client(first).call('POST', '/v2/deployments', dockerBody('added'));
    await closeAll();
    expect(await readFile(seedFile, 'utf8')).toBe(seedText);
    const second = await open({ stateFile, seedFile, seed: { deployments: [] } });
    expect(second.store.allDeployments().map((d) => d.name)).toEqual(['from-seed', 'added']);
    const seedOnly = await open({ seedFile });
    await client(seedOnly).call('POST', '/v2/deployments', dockerBody('memory-only'));
    expect(await readFile(seedFile, 'utf8')).toBe(seedText);
  });

  test('a failed write answers 500 with a clear message', async () => {
    const sub = join(dir, 'gone');
    const { mkdir } = await import('node:fs/promises');
    await mkdir(sub);
    const errors: unknown[] = [];
    const emulator = await open({
      stateFile: join(sub, 'state.yaml'),
      seed: baseSeed(),
      onError: (e) => errors.push(e),
    });
    await rm(sub, { recursive: true });
    const answer = await client(emulator).call('POST', '/v2/deployments', dockerBody('x'));
    expect(answer.status).toBe(500);
    expect(answer.body.detail).toBe('the emulator could not write its state file (ENOENT)');
    expect(errors.length).toBeGreaterThan(0);
  });
});

describe('atomic writes', () => {
  test('writeFileAtomic replaces the file whole and leaves no temp file, even when the rename fails', async () => {
    const file = join(dir, 'a.json');
    await writeFileAtomic(file, '{"v":1}');
    await writeFileAtomic(file, '{"v":2}');
    expect(await readFile(file, 'utf8')).toBe('{"v":2}');
    expect(await readdir(dir)).toEqual(['a.json']);
    // Renaming a file over a directory fails: the temp file must not stay behind.
    const { mkdir } = await import('node:fs/promises');
    await mkdir(join(dir, 'taken'));
    await expect(writeFileAtomic(join(dir, 'taken'), 'x')).rejects.toThrow();
    expect((await readdir(dir)).sort()).toEqual(['a.json', 'taken']);
  });

  test('the persister writes at most twice for a burst and reports each caller once its change is on disk', async () => {
    const file = join(dir, 'p.json');
    let version = 0;
    let statesTaken = 0;
    const persister = createPersister(file, () => {
      statesTaken += 1;
      return { version };
    });
    const waits: Array<Promise<void>> = [];
    for (let i = 0; i < 20; i += 1) {
      version += 1;
      waits.push(persister.schedule());
    }
    await Promise.all(waits);
    expect(statesTaken).toBeLessThanOrEqual(2);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ version: 20 });
    await persister.flush();
  });
});

describe('one write per change', () => {
  test('with a version, a caller whose change the write in flight holds waits for it instead of a second write', async () => {
    const file = join(dir, 'v.json');
    let version = 0;
    let statesTaken = 0;
    const persister = createPersister(
      file,
      () => {
        statesTaken += 1;
        return { version };
      },
      () => version,
    );
    version += 1;
    const first = persister.schedule();
    const again = persister.schedule();
    await Promise.all([first, again]);
    expect(statesTaken).toBe(1);
    version += 1;
    const during = persister.schedule();
    version += 1;
    await Promise.all([during, persister.schedule()]);
    expect(statesTaken).toBe(3);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ version: 3 });
    await persister.flush();
  });
});

describe('seeds', () => {
  test('invalid state files are refused with the file and the field', async () => {
    const file = join(dir, 'bad.yaml');
    await writeFile(file, 'deployments:\n  - name: Bad Name\n    source: codehost\n');
    await expect(startEmulator({ stateFile: file })).rejects.toThrow(
      /state file .*bad.yaml: deployments.0.name: lowercase letters/,
    );
    await writeFile(file, 'deployments: [\n');
    await expect(startEmulator({ stateFile: file })).rejects.toThrow(/state file .*bad.yaml: /);
    await writeFile(
      file,
      'deployments:\n  - name: a\n    source: internal_template\n  - name: a\n    source: internal_template\n',
    );
    await expect(startEmulator({ stateFile: file })).rejects.toThrow(
      /deployments.1: name "a" .* is also used by deployments.0/,
    );
    await writeFile(file, 'colour: red\n');
    await expect(startEmulator({ stateFile: file })).rejects.toThrow(/Unrecognized key/);
    await expect(startEmulator({ seedFile: join(dir, 'missing.yaml') })).rejects.toThrow(/seed file .* does not exist/);
    expect((await readdir(dir)).sort()).toEqual(['bad.yaml']);
  });

  test('the example organization loads, with builds in progress that finish', async () => {
    // The emulator's clock moves only when the test moves it: the builds are in progress however slow the machine is.
    const clock = manualClock();
    const emulator = await open({
      seedFile: new URL('../../examples/emulator-state.yaml', import.meta.url).pathname,
      buildMs: 100,
      clock: clock.now,
    });
    const api = client(emulator);
    const integrations = (await api.call('GET', '/v1/integrations/forge/codehost/install')).body;
    expect(integrations.map((i: { name: string }) => i.name)).toEqual(['acme', 'acme-labs']);
    const page = (await api.call('GET', '/v2/deployments?limit=100')).body;
    const byName = new Map<string, any>(page.resources.map((d: { name: string }) => [d.name, d]));
    expect(page.resources.length).toBeGreaterThanOrEqual(12);
    expect(new Set(page.resources.map((d: { source: string }) => d.source))).toEqual(
      new Set(['codehost', 'external_docker', 'internal_docker', 'internal_source', 'internal_template']),
    );
    expect(new Set(page.resources.map((d: { status: string }) => d.status))).toEqual(
      new Set(['READY', 'UNUSED', 'AWAITING_DATABASE', 'UNKNOWN', 'AWAITING_DELETE']),
    );
    expect(byName.get('fraud-scorer').status).toBe('AWAITING_DATABASE');
    expect(byName.get('triage-bot').active_revision_id).not.toBe(byName.get('triage-bot').latest_revision_id);
    // Every codehost deployment names a repository its integration reaches.
    for (const d of page.resources.filter((r: { source: string }) => r.source === 'codehost')) {
      const repos = (await api.call('GET', `/v1/integrations/forge/codehost/${d.source_config.integration_id}/repos`))
        .body;
      expect(
        repos.map((r: { url: string }) => r.url),
        d.name,
      ).toContain(d.source_config.repo_url);
    }
    clock.advance(100);
    await until('every build to finish', async () => {
      const now = (await api.call('GET', '/v2/deployments?limit=100')).body.resources;
      return now.every(
        (d: { active_revision_id: string; latest_revision_id: string; status: string }) =>
          d.active_revision_id === d.latest_revision_id && d.status !== 'AWAITING_DATABASE',
      )
        ? true
        : undefined;
    });
    expect((await api.call('POST', '/v2/deployments', dockerBody('experiments'))).status).toBe(409);
  });
});
