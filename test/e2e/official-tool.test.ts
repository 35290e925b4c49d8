// Beside the official deploy tool (issue 22): its exact requests against `converge emulator` (a child process), a failed
// build's log lines in `apply --wait`, a deploy by the tool followed by daemon cycles that write nothing, and the tool's
// .env replacing the secret set reported as drift made outside converge.
import { rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { derivedUuid } from '../../src/emulator/records.js';
import { deploymentYaml } from '../helpers/manifests.js';
import {
  dropPrefix,
  killAllConverge,
  REDIS_URL,
  runConverge,
  spawnConverge,
  startDaemon,
  tempDir,
  testPrefix,
  until,
  writeFiles,
  type ConvergeChild,
  type LogLine,
} from './helpers.js';

const KEY = 'official-tool-key-5d1e';
const cleanups: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  await killAllConverge();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** `converge emulator` as a child process, printing one JSON line per request (--log-requests). */
async function emulator(flags: string[]): Promise<{ url: string; child: ConvergeChild; requests: () => LogLine[] }> {
  const child = spawnConverge(['emulator', '--api-key', KEY, '--log-requests', ...flags]);
  const url = await until(
    'the emulator to listen',
    () => /emulator listening on (http:\/\/127\.0\.0\.1:\d+)\n/.exec(child.stderr())?.[1],
    20_000,
    50,
  );
  return { url, child, requests: () => child.lines.filter((l) => typeof l.method === 'string') };
}

interface Call {
  method: string;
  path: string;
  status: number;
  body: unknown;
}

/** The official tool's client (docs/official-tool.md, "What the official tool sends"): X-Api-Key, Accept, JSON bodies. */
function toolClient(url: string, tenant?: string) {
  const calls: Call[] = [];
  async function request(method: string, path: string, payload?: unknown): Promise<Call> {
    const headers: Record<string, string> = { 'X-Api-Key': KEY, Accept: 'application/json' };
    if (tenant) headers['X-Tenant-ID'] = tenant;
    if (payload !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(`${url}${path}`, {
      method,
      headers,
      body: payload === undefined ? undefined : JSON.stringify(payload),
    });
    const text = await res.text();
    const call = { method, path: path.split('?')[0]!, status: res.status, body: text ? JSON.parse(text) : null };
    calls.push(call);
    return call;
  }
  return { calls, request };
}

type Tool = ReturnType<typeof toolClient>;
type Json = Record<string, any>;

/** `find_deployment_id_by_name`: GET /v2/deployments?name_contains=NAME, the exact name among the resources. */
async function findByName(tool: Tool, name: string): Promise<string | undefined> {
  const listed = await tool.request('GET', `/v2/deployments?name_contains=${encodeURIComponent(name)}`);
  return (listed.body as Json).resources.find((d: Json) => d.name === name)?.id;
}

/** `_poll_revision_status`: GET …/revisions?limit=1, then GET …/revisions/{id} until a terminal status. */
async function pollRevision(tool: Tool, id: string): Promise<{ revisionId: string; status: string }> {
  const listed = await tool.request('GET', `/v2/deployments/${id}/revisions?limit=1`);
  const revisionId = (listed.body as Json).resources[0].id as string;
  const status = await until(
    'a terminal revision status',
    async () => {
      const rev = await tool.request('GET', `/v2/deployments/${id}/revisions/${revisionId}`);
      const s = (rev.body as Json).status as string;
      return ['DEPLOYED', 'CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SKIPPED'].includes(s) ? s : undefined;
    },
    20_000,
    100,
  );
  return { revisionId, status };
}

/**
 * The remote build (internal_source) of `langgraph deploy --remote`, request by request (docs/official-tool.md, "What the
 * official tool sends"), with `langgraph_config_path` already renamed `graph_config_path` as the proxy would.
 */
async function remoteDeploy(
  tool: Tool,
  o: { name: string; secrets: Array<{ name: string; value: string }>; installCommand?: string },
): Promise<{ id: string; revisionId: string; status: string; buildLog?: Json }> {
  let id = await findByName(tool, o.name);
  if (!id) {
    // create_deployment(): source_revision_config is {} for internal_source; the tier on every create; the .env as secrets.
    const created = await tool.request('POST', '/v2/deployments', {
      name: o.name,
      source: 'internal_source',
      source_config: { deployment_type: 'dev' },
      source_revision_config: {},
      secrets: o.secrets,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    id = (created.body as Json).id as string;
  }
  // request_upload_url(): no body.
  const upload = await tool.request('POST', `/v2/deployments/${id}/upload-url`);
  const { upload_url: uploadUrl, object_path: objectPath } = upload.body as Json;
  // _upload_to_gcs(): one PUT of the tarball to the signed URL, no API key (fetch sets the Content-Length the tool sets).
  const tarball = Buffer.from('\x1f\x8b fake tarball bytes');
  const put = await fetch(uploadUrl, {
    method: 'PUT',
    body: tarball,
    headers: { 'Content-Type': 'application/gzip', 'X-Goog-Content-Length-Range': '0,209715200' },
  });
  tool.calls.push({ method: 'PUT', path: '(upload_url)', status: put.status, body: null });
  // update_deployment_internal_source(): revision_source, the tarball and config path, tracked_packages, commands, the full .env.
  const patch: Json = {
    revision_source: 'internal_source',
    source_revision_config: { source_tarball_path: objectPath, graph_config_path: 'langgraph.json' },
    tracked_packages: ['langgraph:>=0.3', 'langchain-openai:*'],
  };
  if (o.installCommand !== undefined) patch.source_config = { install_command: o.installCommand };
  patch.secrets = o.secrets;
  await tool.request('PATCH', `/v2/deployments/${id}`, patch);
  const { revisionId, status } = await pollRevision(tool, id);
  let buildLog: Json | undefined;
  // On BUILD_FAILED the tool prints the last build log lines: {"order": "desc", "limit": 30}.
  if (status === 'BUILD_FAILED')
    buildLog = (
      await tool.request('POST', `/v1/projects/${id}/revisions/${revisionId}/build_logs`, { order: 'desc', limit: 30 })
    ).body as Json;
  // _print_deployment_result(): GET the deployment for its custom_url.
  await tool.request('GET', `/v2/deployments/${id}`);
  return { id, revisionId, status, ...(buildLog ? { buildLog } : {}) };
}

function statuses(tool: Tool): string[] {
  return tool.calls.map((c) => `${c.method} ${c.path.replace(/[0-9a-f-]{36}/g, '{id}')} ${c.status}`);
}

describe('the official tool against converge emulator', () => {
  it('a remote build, a local build and the logs command: every request answered as the real service does', async () => {
    const e = await emulator(['--build-ms', '600', '--build-fail', '^broken-']);
    const tool = toolClient(e.url);
    const env = [{ name: 'OPENAI_API_KEY', value: 'sk-tool-env-1' }];

    const good = await remoteDeploy(tool, { name: 'notes-agent', secrets: env, installCommand: 'uv sync' });
    expect(good.status).toBe('DEPLOYED');
    const polls = statuses(tool).filter((s) => s.startsWith('GET /v2/deployments/{id}/revisions/{id}')).length;
    expect(statuses(tool)).toEqual([
      'GET /v2/deployments 200',
      'POST /v2/deployments 201',
      'POST /v2/deployments/{id}/upload-url 200',
      'PUT (upload_url) 200',
      'PATCH /v2/deployments/{id} 200',
      'GET /v2/deployments/{id}/revisions 200',
      ...Array.from({ length: polls }, () => 'GET /v2/deployments/{id}/revisions/{id} 200'),
      'GET /v2/deployments/{id} 200',
    ]);
    const revision = tool.calls.find((c) => c.path.endsWith(`/revisions/${good.revisionId}`))!.body as Json;
    expect(revision).toMatchObject({
      source: 'internal_source',
      tracked_packages: ['langgraph:>=0.3', 'langchain-openai:*'],
      install_command: 'uv sync',
    });
    // The deployment was created with the tier, without graph_config_path; the PATCH brought it with the tarball.
    const live = tool.calls.at(-1)!.body as Json;
    expect(live.source_config).toMatchObject({ deployment_type: 'dev', install_command: 'uv sync' });
    expect(live.source_revision_config).toMatchObject({
      graph_config_path: 'langgraph.json',
      source_tarball_path: expect.stringMatching(/^uploads\//),
    });

    // A second deploy of the same name finds it and skips the create; a failing build prints why.
    const broken = await remoteDeploy(tool, { name: 'broken-agent', secrets: env });
    expect(broken.status).toBe('BUILD_FAILED');
    const lastLines = [...(broken.buildLog!.logs as Json[])].reverse().map((l) => l.message);
    expect(lastLines.at(-1)).toBe('Build failed: "pip install -e ." exited with status 1');
    expect(broken.buildLog!.logs[0]).toMatchObject({
      id: expect.any(String),
      timestamp: expect.any(Number),
      level: 'ERROR',
    });

    // The local build (internal_docker): create, push-token, PATCH the pushed image (docs/official-tool.md).
    const local = toolClient(e.url);
    const created = await local.request('POST', '/v2/deployments', {
      name: 'pushed-agent',
      source: 'internal_docker',
      source_config: { deployment_type: 'prod' },
      source_revision_config: {},
      secrets: env,
    });
    const id = (created.body as Json).id as string;
    const token = await local.request('POST', `/v2/deployments/${id}/push-token`);
    expect(token.body).toEqual({ token: expect.any(String), registry_url: expect.any(String) });
    const pushed = await local.request('PATCH', `/v2/deployments/${id}`, {
      revision_source: 'internal_docker',
      source_revision_config: {
        image_uri: `${(token.body as Json).registry_url}/pushed-agent@sha256:${'a'.repeat(64)}`,
      },
      tracked_packages: ['langgraph:>=0.3'],
      secrets: env,
    });
    expect(pushed.body).toMatchObject({ latest_revision_id: expect.any(String) });
    // push-token on an internal_source deployment: the 400 the tool recognises.
    const wrong = await local.request('POST', `/v2/deployments/${good.id}/push-token`);
    expect(wrong.status).toBe(400);
    expect((wrong.body as Json).detail).toContain("only available for 'internal_docker' source deployments");
    // A tarball path the service did not hand out is refused.
    const foreign = await local.request('PATCH', `/v2/deployments/${good.id}`, {
      source_revision_config: { source_tarball_path: 'uploads/elsewhere.tgz', graph_config_path: 'langgraph.json' },
    });
    expect(foreign.status).toBe(400);

    // `langgraph deploy logs`: {"limit": 100, "order": "desc"} plus the filters it takes.
    const logs = toolClient(e.url);
    const deploy = await logs.request('POST', `/v1/projects/${good.id}/deploy_logs`, { limit: 100, order: 'desc' });
    expect((deploy.body as Json).logs.map((l: Json) => l.message)).toContain('Application startup complete');
    const errors = await logs.request('POST', `/v1/projects/${broken.id}/revisions/${broken.revisionId}/build_logs`, {
      limit: 100,
      order: 'desc',
      level: 'ERROR',
      query: 'exited',
    });
    expect((errors.body as Json).logs.map((l: Json) => l.message)).toEqual([
      'Build failed: "pip install -e ." exited with status 1',
    ]);
    const window = await logs.request('POST', `/v1/projects/${good.id}/revisions/${good.revisionId}/deploy_logs`, {
      limit: 100,
      order: 'asc',
      start_time: '2000-01-01T00:00:00Z',
      end_time: '2000-01-02T00:00:00Z',
    });
    expect((window.body as Json).logs).toEqual([]);
    expect(statuses(logs)).toEqual([
      'POST /v1/projects/{id}/deploy_logs 200',
      'POST /v1/projects/{id}/revisions/{id}/build_logs 200',
      'POST /v1/projects/{id}/revisions/{id}/deploy_logs 200',
    ]);
    // Secret values never reach the emulator's request log.
    expect(e.child.stdout()).not.toContain('sk-tool-env-1');
  });

  it('--org-scoped-key: without X-Tenant-Id the 403 asks for a workspace (the tool then sends one)', async () => {
    const e = await emulator(['--org-scoped-key']);
    const bare = await toolClient(e.url).request('GET', '/v2/deployments?name_contains=x');
    expect(bare.status).toBe(403);
    expect((bare.body as Json).detail).toContain('requires workspace specification');
    const scoped = await toolClient(e.url, derivedUuid('tenant', 'default')).request(
      'GET',
      '/v2/deployments?name_contains=x',
    );
    expect(scoped.status).toBe(200);
    // converge says which setting names the workspace, and works with it.
    const dir = await manifests({
      'tpl.yaml': [
        'apiVersion: converge/v1',
        'kind: Deployment',
        'metadata:',
        '  name: tpl',
        'spec:',
        '  source: internal_template',
        '',
      ].join('\n'),
    });
    const common = ['plan', dir, '--api-url', e.url, '--api-key', KEY, '--no-applied-state'];
    const bareRun = await runConverge(common);
    expect(bareRun.code).toBe(1);
    expect(bareRun.stderr).toContain('requires workspace specification');
    expect(bareRun.stderr).toContain('CONVERGE_TENANT_ID (--tenant-id)');
    const withTenant = await runConverge([...common, '--tenant-id', derivedUuid('tenant', 'default')]);
    expect(withTenant.code, withTenant.stderr).toBe(0);
    expect(withTenant.stdout).toContain('1 to create');
  });
});

async function manifests(files: Record<string, string>): Promise<string> {
  const dir = await tempDir('official-tool');
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  await writeFiles(dir, files);
  return dir;
}

function prefix(label: string): string {
  const p = testPrefix(label);
  cleanups.push(() => dropPrefix(p));
  return p;
}

/** An internal_source deployment that leaves the artifact to the official tool: tier and secrets only. */
function sourceManifest(
  name: string,
  secrets: Array<[string, string]>,
  annotations: Record<string, string> = {},
): string {
  const spec = [
    'source: internal_source',
    'source_config:',
    '  deployment_type: dev',
    'secrets:',
    ...secrets.flatMap(([secret, envName]) => [`  - name: ${secret}`, `    valueFrom: { env: ${envName} }`]),
  ];
  return deploymentYaml(name, spec.join('\n'), annotations);
}

/** An emulator request line (method, route, status and body are always set on one). */
type RequestLine = LogLine & { method: string; route: string; status: number };

/** Writes (POST, PATCH, DELETE, PUT) the emulator logged from request number `from` on. */
function writesSince(requests: LogLine[], from: number): RequestLine[] {
  return requests.slice(from).filter((r): r is RequestLine => r.method !== 'GET');
}

async function resyncs(daemon: Awaited<ReturnType<typeof startDaemon>>, more: number): Promise<void> {
  const count = async (): Promise<number> => (await daemon.status()).reconciles?.total ?? 0;
  const target = (await count()) + more;
  await until(`${more} more reconciles`, async () => (await count()) >= target, 30_000, 100);
}

describe('converge beside the official tool', () => {
  it("apply --wait shows the failed build's last log lines, every declared secret value masked", async () => {
    const e = await emulator(['--build-ms', '600', '--build-fail', '^broken-', '--build-log-secrets']);
    const dir = await manifests({
      'broken-api.yaml': [
        'apiVersion: converge/v1',
        'kind: Deployment',
        'metadata:',
        '  name: broken-api',
        'spec:',
        '  source: external_docker',
        '  source_config: { deployment_type: dev }',
        '  source_revision_config: { image_uri: docker.io/acme/broken-api:1 }',
        '  secrets:',
        '    - name: API_TOKEN',
        '      valueFrom: { env: BROKEN_API_TOKEN }',
        '',
      ].join('\n'),
    });
    const secret = 'tok-5ecret-value-9f2c';
    const run = await runConverge(
      [
        'apply',
        dir,
        '--wait',
        '--wait-timeout',
        '60s',
        '--api-url',
        e.url,
        '--api-key',
        KEY,
        '--redis-url',
        REDIS_URL,
        '--redis-prefix',
        prefix('wait'),
        '--health-poll',
        '200ms',
      ],
      { BROKEN_API_TOKEN: secret },
    );
    expect(run.code, run.stderr).toBe(1);
    expect(run.stdout).toMatch(/failed {4}Deployment\/broken-api \(deployment \S+\): revision \S+ ended BUILD_FAILED/);
    expect(run.stdout).toMatch(/ {6}last build log lines of revision \S+:\n/);
    expect(run.stdout).toContain('      | [');
    expect(run.stdout).toContain('[DEBUG] Environment: API_TOKEN=********');
    expect(run.stdout).toMatch(/\[ERROR\] Build failed: "pip install -e \." exited with status 1\n/);
    expect(run.stdout + run.stderr).not.toContain(secret);
    // The emulator did print the value: the mask is converge's.
    const id = /deployment (\S+)\)/.exec(run.stdout)![1]!;
    const rev = /revision (\S+) ended/.exec(run.stdout)![1]!;
    const raw = await toolClient(e.url).request('POST', `/v1/projects/${id}/revisions/${rev}/build_logs`, {
      order: 'asc',
      limit: 100,
      query: 'Environment',
    });
    expect((raw.body as Json).logs[0].message).toBe(`Environment: API_TOKEN=${secret}`);
  }, 90_000);

  it("the daemon logs a failed build's last lines, converge status shows them, converge logs prints the log; all masked", async () => {
    const e = await emulator(['--build-ms', '600', '--build-fail', '^broken-', '--build-log-secrets']);
    const secret = 'tok-daemon-value-77ab';
    const env = { BROKEN_API_TOKEN: secret };
    const dir = await manifests({
      'broken-api.yaml': [
        'apiVersion: converge/v1',
        'kind: Deployment',
        'metadata:',
        '  name: broken-api',
        'spec:',
        '  source: external_docker',
        '  source_revision_config: { image_uri: docker.io/acme/broken-api:1 }',
        '  secrets:',
        '    - name: API_TOKEN',
        '      valueFrom: { env: BROKEN_API_TOKEN }',
        '',
      ].join('\n'),
    });
    const daemon = await startDaemon(
      dir,
      [
        '--api-url',
        e.url,
        '--api-key',
        KEY,
        '--redis-prefix',
        prefix('daemon-log'),
        '--resync',
        '1s',
        '--health-poll',
        '200ms',
        '--log-level',
        'info',
      ],
      env,
    );
    const logged = await daemon.waitForLine((l) => l.msg === 'build log of the failed revision (last lines)', 30_000);
    const lines = logged.lines as string[];
    expect(lines.length).toBeGreaterThan(2);
    expect(lines.length).toBeLessThanOrEqual(20);
    expect(lines.at(-1)).toMatch(/\[ERROR\] Build failed: "pip install -e \." exited with status 1$/);
    expect(lines).toContainEqual(expect.stringMatching(/Environment: API_TOKEN=\*{8}$/));
    const status = await runConverge(['status', '--url', daemon.url]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(
      /Last build log lines of Deployment\/broken-api, revision \S+ \(converge logs broken-api --build shows more\):\n {2}\| \[/,
    );
    expect(status.stdout).toContain('Build failed: "pip install -e ." exited with status 1');
    expect(daemon.stdout() + status.stdout).not.toContain(secret);

    const common = ['--api-url', e.url, '--api-key', KEY];
    const logs = await runConverge(
      ['logs', 'broken-api', '--build', '--limit', '10', '--manifests', dir, ...common],
      env,
    );
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stderr).toMatch(/^converge logs: build log of revision \S+\n$/);
    const printed = logs.stdout.trimEnd().split('\n');
    expect(printed.at(-1)).toMatch(
      /^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] \[ERROR\] Build failed: "pip install -e \." exited with status 1$/,
    );
    expect(logs.stdout).toContain('[DEBUG] Environment: API_TOKEN=********');
    expect(logs.stdout).not.toContain(secret);
    // Following a build that has ended prints it and stops; three lines when asked for three.
    const followed = await runConverge(
      ['logs', 'broken-api', '--build', '--follow', '--limit', '3', '--poll', '200ms', ...common],
      env,
    );
    expect(followed.code, followed.stderr).toBe(0);
    expect(followed.stdout.trimEnd().split('\n')).toHaveLength(3);
    const unknown = await runConverge(['logs', 'nobody', ...common]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('the service has no deployment named "nobody"');
    const help = await runConverge(['logs', '--help']);
    expect(help.stdout).toContain('converge logs NAME [--build|--deploy] [--revision ID] [--follow] [--limit N]');

    // A service without the log endpoints: said once, exit 0.
    const bare = await emulator(['--spec-only']);
    await toolClient(bare.url).request('POST', '/v2/deployments', {
      name: 'plain',
      source: 'internal_template',
      source_config: {},
      source_revision_config: {},
      secrets: [],
    });
    const none = await runConverge(['logs', 'plain', '--api-url', bare.url, '--api-key', KEY]);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stderr).toBe(
      'converge logs: the service has no deploy log endpoint (it answered 404); nothing to show\n',
    );
  }, 90_000);

  it('a deploy by the official tool, then daemon cycles: converge writes nothing where the manifest leaves the artifact undeclared', async () => {
    const e = await emulator(['--build-ms', '300', '--secrets', 'plain']);
    const env = { NOTES_OPENAI: 'sk-notes-1' };
    const dir = await manifests({
      'notes-agent.yaml': sourceManifest('notes-agent', [['OPENAI_API_KEY', 'NOTES_OPENAI']]),
    });
    const p = prefix('beside');
    // converge creates it (tier, secrets); no artifact, so no revision yet.
    const apply = await runConverge(
      ['apply', dir, '--api-url', e.url, '--api-key', KEY, '--redis-url', REDIS_URL, '--redis-prefix', p],
      env,
    );
    expect(apply.code, apply.stderr).toBe(0);
    // The official tool finds it by name and pushes a build with its .env (the same values).
    const tool = toolClient(e.url);
    const first = await remoteDeploy(tool, {
      name: 'notes-agent',
      secrets: [{ name: 'OPENAI_API_KEY', value: 'sk-notes-1' }],
    });
    expect(first.status).toBe('DEPLOYED');
    expect(statuses(tool).slice(0, 2)).toEqual(['GET /v2/deployments 200', 'POST /v2/deployments/{id}/upload-url 200']);
    const mark = e.requests().length;
    const daemon = await startDaemon(
      dir,
      [
        '--api-url',
        e.url,
        '--api-key',
        KEY,
        '--redis-prefix',
        p,
        '--resync',
        '1s',
        '--drift',
        'heal',
        '--log-level',
        'info',
      ],
      env,
    );
    await resyncs(daemon, 4);
    expect(writesSince(e.requests(), mark)).toEqual([]);
    // A new revision started by the tool while the daemon runs is not drift: still no write of converge's.
    const during = e.requests().length;
    const second = await remoteDeploy(toolClient(e.url), {
      name: 'notes-agent',
      secrets: [{ name: 'OPENAI_API_KEY', value: 'sk-notes-1' }],
    });
    expect(second.status).toBe('DEPLOYED');
    await resyncs(daemon, 3);
    expect(writesSince(e.requests(), during).map((r) => `${r.method} ${r.route}`)).toEqual([
      'POST /v2/deployments/{deployment_id}/upload-url',
      'PUT /uploads/{token}',
      'PATCH /v2/deployments/{deployment_id}',
    ]);
    const row = (await daemon.status()).resources.find((r) => r.name === 'notes-agent')! as unknown as {
      action: string;
      drift: unknown;
    };
    expect(row.action).toBe('noop');
    expect(row.drift).toBeNull();
  }, 90_000);

  it("the tool's .env replacing the secret set is drift made outside converge: reported under report, healed under heal", async () => {
    const e = await emulator(['--build-ms', '300', '--secrets', 'plain', '--secrets-patch', 'replace']);
    const env = { ENV_A: 'value-a', ENV_B: 'value-b' };
    const dir = await manifests({
      'env-agent.yaml': sourceManifest('env-agent', [
        ['A', 'ENV_A'],
        ['B', 'ENV_B'],
      ]),
    });
    const p = prefix('replaced');
    expect(
      (
        await runConverge(
          ['apply', dir, '--api-url', e.url, '--api-key', KEY, '--redis-url', REDIS_URL, '--redis-prefix', p],
          env,
        )
      ).code,
    ).toBe(0);
    // The tool's .env has A and C, not B: its PATCH replaces the set.
    const deployed = await remoteDeploy(toolClient(e.url), {
      name: 'env-agent',
      secrets: [
        { name: 'A', value: 'value-a' },
        { name: 'C', value: 'value-c' },
      ],
    });
    expect(deployed.status).toBe('DEPLOYED');

    const mark = e.requests().length;
    const reporter = await startDaemon(
      dir,
      [
        '--api-url',
        e.url,
        '--api-key',
        KEY,
        '--redis-prefix',
        p,
        '--resync',
        '1s',
        '--drift',
        'report',
        '--log-level',
        'info',
      ],
      env,
    );
    const row = await until('the drift row', async () => {
      const r = (await reporter.status()).resources.find((x) => x.name === 'env-agent') as unknown as {
        drift: { policy: string; fields: string[]; reason: string } | null;
      };
      return r?.drift ?? undefined;
    });
    expect(row.policy).toBe('report');
    expect(row.fields).toEqual(['secrets.B']);
    expect(row.reason).toMatch(
      /^changed outside converge at \S+, after converge's last write at \S+: its secret set was replaced \(declared secret B missing or different\)/,
    );
    const logged = await reporter.waitForLine(
      (l) =>
        l.msg ===
        'drift reported: the live deployment differs from its unchanged manifest; not reverted (drift policy report)',
    );
    expect(logged.reason).toBe(row.reason);
    await resyncs(reporter, 2);
    expect(writesSince(e.requests(), mark)).toEqual([]);
    await reporter.kill('SIGTERM');

    const healer = await startDaemon(
      dir,
      [
        '--api-url',
        e.url,
        '--api-key',
        KEY,
        '--redis-prefix',
        p,
        '--resync',
        '1s',
        '--drift',
        'heal',
        '--log-level',
        'info',
      ],
      env,
    );
    await healer.waitForLine(
      (l) =>
        l.msg === 'drift found: reverting the live deployment to its manifest' &&
        typeof l.reason === 'string' &&
        l.reason.startsWith('changed outside converge'),
    );
    await until('the healing PATCH', () => writesSince(e.requests(), mark).length > 0 || undefined);
    await resyncs(healer, 2);
    const healed = writesSince(e.requests(), mark);
    expect(healed.map((r) => `${r.method} ${r.route} ${r.status}`)).toEqual([
      'PATCH /v2/deployments/{deployment_id} 200',
    ]);
    expect((healed[0]!.body as { secrets: Array<{ name: string }> }).secrets.map((s) => s.name)).toEqual(['A', 'B']);
    expect(JSON.stringify(e.requests())).not.toContain('value-b');
  }, 90_000);
});
