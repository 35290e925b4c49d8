// Providers against a service that reads and updates them (GET/PATCH /v2/auth/providers…, beyond the spec): plan the
// fields that differ, PATCH only those, adopt providers created elsewhere, rotate client_secret by hash; and the
// fallback of a spec-only service (one plan note, today's create-once behaviour).
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { emulatorDiscoveryHook } from '../../src/emulator/discovery-hook.js';
import {
  startEmulator,
  type EmulatorOptions,
  type RequestLogEntry,
  type RunningEmulator,
} from '../../src/emulator/server.js';
import { startCombinedServer } from '../discovery/mcp-oauth-fixture.js';
import { landedWrites, manifestDir, providerYaml, runApplyCli, seedWith, writes } from '../helpers/apply.js';
import { lossyProxy } from '../helpers/lossy-proxy.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';
import { runCapture } from '../helpers/cli.js';
import { ServiceClient } from '../../src/service/client.js';

const ENV = { GH_SECRET: 'planted-gh-secret-51c0', NO_COLOR: '1' };

interface PlanJson {
  summary: Record<string, number>;
  changes: Array<{
    kind: string;
    name: string;
    action: string;
    fields: Array<{ path: string; before: unknown; after: unknown; sensitive: boolean }>;
    reason: string | null;
  }>;
  notes?: string[];
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function providerRequests(log: RequestLogEntry[]): string[] {
  return log.filter((e) => e.path.startsWith('/v2/auth/providers')).map((e) => `${e.method} ${e.path} ${e.status}`);
}

/** The bodies of the provider PATCHes that landed (the emulator's log shows a secret value as its redacted hash). */
function patchBodies(log: RequestLogEntry[]): Array<Record<string, unknown>> {
  return log
    .filter((e) => e.method === 'PATCH' && e.route === '/v2/auth/providers/{provider_id}' && e.status === 200)
    .map((e) => e.body as Record<string, unknown>);
}

const REDACTED = expect.stringMatching(/^<redacted sha256:[0-9a-f]+>$/);

describe('providers against a service that reads and updates them', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function setup(files: Record<string, string>, options: Partial<EmulatorOptions> = {}) {
    const emulator: RunningEmulator = await startEmulator({ seed: seedWith([]), buildMs: 0, ...options });
    const tree = await manifestDir(files);
    const prefix = testPrefix('providers');
    cleanups.push(
      () => emulator.close(),
      () => tree.remove(),
      () => dropPrefix(prefix),
    );
    const common = ['--redis-url', REDIS_URL, '--redis-prefix', prefix];
    const applyArgs = (url = emulator.url, ...extra: string[]) => [
      tree.dir,
      '--api-url',
      url,
      ...common,
      '--backoff',
      '20ms',
      ...extra,
    ];
    async function planJson(env: NodeJS.ProcessEnv = ENV, ...extra: string[]): Promise<PlanJson> {
      const run = await runCapture(
        ['plan', tree.dir, '--api-url', emulator.url, ...common, '--output', 'json', ...extra],
        env,
      );
      expect(run.stderr.replace(/^converge plan: read \d+ manifest files? in \S+\n/, '')).toBe('');
      const plan = JSON.parse(run.stdout) as PlanJson & { summary: { blocked: number } };
      // A blocked resource makes plan exit 1, with or without --detailed-exitcode (Terraform's rule on errors).
      expect(run.code).toBe(plan.summary.blocked > 0 ? 1 : 0);
      return plan;
    }
    /** Someone edits the provider in the service, outside converge. */
    async function editLive(id: string, body: Record<string, unknown>): Promise<void> {
      const answer = await fetch(`${emulator.url}/v2/auth/providers/${id}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(answer.status).toBe(200);
      emulator.resetLog();
    }
    return { emulator, tree, prefix, applyArgs, planJson, editLive };
  }

  it('plans an update with only the changed fields, PATCHes only those, and the next plan is a noop', async () => {
    const { emulator, applyArgs, planJson, editLive } = await setup({ 'gh.yaml': providerYaml('github', 'GH_SECRET') });
    const created = await runApplyCli(applyArgs(), ENV);
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/done +OAuthProvider\/github: created/);
    // read by id right before the create, then the create; the list was probed once by the plan of this process
    expect(providerRequests(emulator.requestLog)).toEqual([
      'GET /v2/auth/providers 200',
      'GET /v2/auth/providers/github 404',
      'POST /v2/auth/providers 200',
    ]);

    await editLive('github', { token_url: 'https://elsewhere.example.com/token', name: 'Renamed by hand' });
    const plan = await planJson();
    const change = plan.changes.find((c) => c.kind === 'OAuthProvider')!;
    expect(change.action).toBe('update');
    expect(change.fields).toEqual([
      { path: 'name', before: 'Renamed by hand', after: 'GITHUB', sensitive: false },
      {
        path: 'token_url',
        before: 'https://elsewhere.example.com/token',
        after: 'https://github.example.com/oauth/token',
        sensitive: false,
      },
    ]);
    expect(change.reason).toBeNull();
    expect(plan.notes ?? []).toEqual([]);

    emulator.resetLog();
    const applied = await runApplyCli(applyArgs(), ENV);
    expect(applied.code).toBe(0);
    expect(applied.stdout).toMatch(/done +OAuthProvider\/github: updated \(updated name, token_url\)/);
    expect(writes(emulator.requestLog).map((e) => `${e.method} ${e.route} ${e.status}`)).toEqual([
      'PATCH /v2/auth/providers/{provider_id} 200',
    ]);
    expect(patchBodies(emulator.requestLog)).toEqual([
      { name: 'GITHUB', token_url: 'https://github.example.com/oauth/token' },
    ]);
    // the job read the provider by id right before its PATCH
    const log = emulator.requestLog.map((e) => `${e.method} ${e.path}`);
    expect(log.indexOf('GET /v2/auth/providers/github')).toBeLessThan(log.indexOf('PATCH /v2/auth/providers/github'));

    const again = await planJson();
    expect(again.summary).toMatchObject({ create: 0, update: 0, blocked: 0, noop: 1 });
    emulator.resetLog();
    const second = await runApplyCli(applyArgs(), ENV);
    expect(second.stdout).toContain('No changes.');
    expect(writes(emulator.requestLog)).toEqual([]);
  });

  it('rotates client_secret by hash: only the secret is sent, once', async () => {
    const { emulator, applyArgs, planJson } = await setup({ 'gh.yaml': providerYaml('github', 'GH_SECRET') });
    expect((await runApplyCli(applyArgs(), ENV)).code).toBe(0);
    const rotated = { ...ENV, GH_SECRET: 'planted-gh-rotated-7e22' };
    const plan = await planJson(rotated);
    const change = plan.changes.find((c) => c.kind === 'OAuthProvider')!;
    expect(change).toMatchObject({
      action: 'update',
      fields: [{ path: 'client_secret', before: '(sensitive)', after: '(sensitive)', sensitive: true }],
      reason: null,
    });

    emulator.resetLog();
    const run = await runApplyCli(applyArgs(), rotated);
    expect(run.code).toBe(0);
    expect(patchBodies(emulator.requestLog)).toEqual([{ client_secret: REDACTED }]);
    expect(run.stdout).not.toContain(rotated.GH_SECRET);
    expect(emulator.store.providers()[0]!.client_secret_sha256).toBe(sha256(rotated.GH_SECRET));
    emulator.resetLog();
    expect((await runApplyCli(applyArgs(), rotated)).code).toBe(0);
    expect(writes(emulator.requestLog)).toEqual([]);
  });

  it('shows a provider created elsewhere as an adoption, then takes it over with one PATCH (secret included once)', async () => {
    const seed = {
      ...seedWith([]),
      providers: [
        {
          provider_id: 'github',
          name: 'GITHUB',
          client_id: 'someone-else',
          auth_url: 'https://github.example.com/oauth/authorize',
          token_url: 'https://github.example.com/oauth/token',
          client_secret: 'theirs',
        },
      ],
    };
    const { emulator, applyArgs, planJson } = await setup({ 'gh.yaml': providerYaml('github', 'GH_SECRET') }, { seed });
    const plan = await planJson();
    const change = plan.changes.find((c) => c.kind === 'OAuthProvider')!;
    expect(change.action).toBe('adopt');
    expect(change.fields).toEqual([
      { path: 'client_id', before: 'someone-else', after: 'id-github', sensitive: false },
      { path: 'client_secret', before: '(sensitive)', after: '(sensitive)', sensitive: true },
    ]);
    expect(change.reason).toBe(
      'exists in the service, created outside converge: converge will take it over and update 2 fields; ' +
        'client_secret: the service never returns it and converge has no record of writing it, so it is sent once with this write',
    );

    emulator.resetLog();
    const run = await runApplyCli(applyArgs(), ENV);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      /done +OAuthProvider\/github: adopted \(created outside converge; converge took it over and updated client_id, client_secret\)/,
    );
    expect(writes(emulator.requestLog).map((e) => `${e.method} ${e.status}`)).toEqual(['PATCH 200']);
    expect(patchBodies(emulator.requestLog)).toEqual([{ client_id: 'id-github', client_secret: REDACTED }]);
    expect(emulator.store.providers()[0]!.client_secret_sha256).toBe(sha256(ENV.GH_SECRET));

    const after = await planJson();
    expect(after.summary).toMatchObject({ update: 0, noop: 1 });
  });

  it('a create whose answer is lost is read back, not sent again; a lost PATCH answer is settled by the read', async () => {
    let loseCreate = true;
    let losePatch = false;
    const { emulator, applyArgs, editLive } = await setup({ 'gh.yaml': providerYaml('github', 'GH_SECRET') });
    const proxy = await lossyProxy(emulator.url, {
      loseAnswer(method, path) {
        if (method === 'POST' && path === '/v2/auth/providers' && loseCreate) return !(loseCreate = false);
        if (method === 'PATCH' && losePatch) return !(losePatch = false);
        return false;
      },
    });
    cleanups.push(() => proxy.close());
    const run = await runApplyCli(applyArgs(proxy.url), ENV);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      /done +OAuthProvider\/github: adopted \(an earlier attempt created the provider but its answer was lost; converge recorded it as applied\)/,
    );
    expect(landedWrites(emulator.requestLog).map((e) => `${e.method} ${e.status}`)).toEqual(['POST 200']);
    expect(writes(emulator.requestLog)).toHaveLength(1);

    await editLive('github', { auth_url: 'https://elsewhere.example.com/authorize' });
    losePatch = true;
    const patched = await runApplyCli(applyArgs(proxy.url), ENV);
    expect(patched.code).toBe(0);
    expect(patched.stdout).toMatch(
      /done +OAuthProvider\/github: adopted \(the answer to an earlier attempt was lost; live state shows its write landed\)/,
    );
    expect(writes(emulator.requestLog).map((e) => `${e.method} ${e.status}`)).toEqual(['PATCH 200']);
    emulator.resetLog();
    expect((await runApplyCli(applyArgs(proxy.url), ENV)).stdout).toContain('No changes.');
    expect(writes(emulator.requestLog)).toEqual([]);
  });

  it('a create that meets 409 (made elsewhere after the read) sends nothing more; the next apply decides to adopt and PATCHes what differs', async () => {
    const org = 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb';
    const { emulator, applyArgs } = await setup(
      { 'gh.yaml': providerYaml('github', 'GH_SECRET') },
      { seed: { ...seedWith([]), organization_id: org } },
    );
    let raced = false;
    const proxy = await lossyProxy(emulator.url, {
      // just before the job's create reaches the service, someone else creates the provider
      rateLimit(method, path) {
        if (method === 'POST' && path === '/v2/auth/providers' && !raced) {
          raced = true;
          const made = emulator.store.createProvider(org, {
            provider_id: 'github',
            name: 'GITHUB',
            client_id: 'raced',
            auth_url: 'https://github.example.com/oauth/authorize',
            token_url: 'https://github.example.com/oauth/token',
          });
          expect(made.ok).toBe(true);
        }
        return false;
      },
    });
    cleanups.push(() => proxy.close());
    const run = await runApplyCli(applyArgs(proxy.url), ENV);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(
      /failed +OAuthProvider\/github: not written: live state changed since the decision: the create was answered 409: an OAuth provider "github" was made elsewhere meanwhile; the next reconcile decides again/,
    );
    expect(writes(emulator.requestLog).map((e) => `${e.method} ${e.status}`)).toEqual(['POST 409']);
    const adopt = await runApplyCli(applyArgs(proxy.url), ENV);
    expect(adopt.code).toBe(0);
    expect(adopt.stdout).toMatch(
      /done +OAuthProvider\/github: adopted \(created outside converge; converge took it over and updated client_id, client_secret\)/,
    );
    expect(writes(emulator.requestLog).map((e) => `${e.method} ${e.status}`)).toEqual(['POST 409', 'PATCH 200']);
    expect(patchBodies(emulator.requestLog)).toEqual([{ client_id: 'id-github', client_secret: REDACTED }]);
    emulator.resetLog();
    expect((await runApplyCli(applyArgs(proxy.url), ENV)).stdout).toContain('No changes.');
    expect(writes(emulator.requestLog)).toEqual([]);
  });

  it('an mcp provider whose live endpoints differ from what discovery finds now is patched with the discovered ones', async () => {
    const mcp = await startCombinedServer({ registration: true });
    cleanups.push(() => mcp.close());
    const manifest = `apiVersion: converge/v1\nkind: OAuthProvider\nmetadata:\n  name: tools\nspec:\n  name: Tools\n  mcp_server_url: ${mcp.mcpUrl}\n`;
    const { emulator, applyArgs, planJson, editLive } = await setup(
      { 'tools.yaml': manifest },
      { discover: emulatorDiscoveryHook({ allowLocal: true }), allowLocalDiscovery: true },
    );
    const local = '--allow-local-discovery';
    expect((await runApplyCli(applyArgs(emulator.url, local), ENV)).code).toBe(0);
    expect((await planJson(ENV, local)).summary).toMatchObject({ create: 0, update: 0, noop: 1 });

    // the service holds endpoints the MCP server no longer advertises
    await editLive('tools', { auth_url: 'https://old-idp.example.com/authorize', uses_pkce: false });
    const plan = await planJson(ENV, local);
    const change = plan.changes.find((c) => c.kind === 'OAuthProvider')!;
    expect(change.action).toBe('update');
    expect(change.fields).toEqual([
      {
        path: 'auth_url',
        before: 'https://old-idp.example.com/authorize',
        after: `${mcp.origin}/authorize`,
        sensitive: false,
      },
      { path: 'uses_pkce', before: false, after: true, sensitive: false },
    ]);
    expect(change.reason).toBe(`auth_url, uses_pkce: as discovery of ${mcp.mcpUrl} finds them now`);

    emulator.resetLog();
    expect((await runApplyCli(applyArgs(emulator.url, local), ENV)).code).toBe(0);
    expect(patchBodies(emulator.requestLog)).toEqual([{ auth_url: `${mcp.origin}/authorize`, uses_pkce: true }]);
    expect(emulator.requestLog.filter((e) => e.path === '/v2/auth/providers/mcp-discover')).toEqual([]);
    expect((await planJson(ENV, local)).summary).toMatchObject({ update: 0, noop: 1 });
  });

  it('blocks a change no PATCH can make, naming the field and the way out', async () => {
    const withType = providerYaml('github', 'GH_SECRET') + '  provider_type: slack\n';
    const seed = {
      ...seedWith([]),
      providers: [
        {
          provider_id: 'github',
          name: 'GITHUB',
          client_id: 'id-github',
          auth_url: 'https://github.example.com/oauth/authorize',
          token_url: 'https://github.example.com/oauth/token',
          provider_type: 'microsoft' as const,
        },
      ],
    };
    const { planJson } = await setup({ 'gh.yaml': withType }, { seed });
    const change = (await planJson()).changes.find((c) => c.kind === 'OAuthProvider')!;
    expect(change.action).toBe('blocked');
    expect(change.fields).toContainEqual({
      path: 'provider_type',
      before: 'microsoft',
      after: 'slack',
      sensitive: false,
    });
    expect(change.reason).toContain(
      'provider_type cannot be changed: PATCH /v2/auth/providers/{provider_id} does not take it; delete the provider in the service and converge creates it again',
    );
  });

  it('spec-only service: one plan note, no provider read after the probe, and a changed provider is blocked as before', async () => {
    const { emulator, tree, prefix, applyArgs, planJson } = await setup(
      { 'gh.yaml': providerYaml('github', 'GH_SECRET'), 'gl.yaml': providerYaml('gitlab', 'GH_SECRET') },
      { specOnly: true },
    );
    const first = await planJson();
    expect(first.notes).toHaveLength(1);
    expect(first.notes![0]).toMatch(
      /^the service has no GET \/v2\/auth\/providers \(it answered 405\), so converge cannot read or update OAuth providers/,
    );
    expect(first.summary).toMatchObject({ create: 2 });

    emulator.resetLog();
    const run = await runApplyCli(applyArgs(), ENV);
    expect(run.code).toBe(0);
    // probed once by the plan of this process; the jobs read no provider
    expect(providerRequests(emulator.requestLog).sort()).toEqual([
      'GET /v2/auth/providers 405',
      'POST /v2/auth/providers 200',
      'POST /v2/auth/providers 200',
    ]);

    const text = await runCapture(
      ['plan', tree.dir, '--api-url', emulator.url, '--redis-url', REDIS_URL, '--redis-prefix', prefix],
      { ...ENV, GH_SECRET: 'planted-gh-rotated-7e22' },
    );
    expect(text.stdout).toContain('! blocked OAuthProvider/github');
    expect(text.stdout).toContain('the service cannot update an OAuth provider');
    expect(text.stdout.match(/Note: /g)).toHaveLength(1);
    expect(text.stdout.match(/the service has no GET \/v2\/auth\/providers/g)).toHaveLength(1);
    expect(text.stdout).not.toContain('planted-gh');
  });
});

describe('ServiceClient provider probe', () => {
  it('probes once per client: concurrent callers share one list; after a 405 no provider list is sent again', async () => {
    for (const specOnly of [false, true]) {
      const emulator = await startEmulator({ specOnly });
      const client = new ServiceClient({ baseUrl: emulator.url });
      try {
        const reads = await Promise.all([client.providerReads(), client.providerReads(), client.providerReads()]);
        expect(reads.every((r) => r.readable === !specOnly)).toBe(true);
        const listing = await client.listProviders();
        expect(listing.readable).toBe(!specOnly);
        const lists = emulator.requestLog.filter((e) => e.method === 'GET' && e.path === '/v2/auth/providers');
        // readable: the probe and the plan's own list; spec-only: the probe alone
        expect(lists.map((e) => e.status)).toEqual(specOnly ? [405] : [200, 200]);
        if (!specOnly) expect(await client.getProvider('absent')).toBeUndefined();
      } finally {
        await client.close();
        await emulator.close();
      }
    }
  });
});
