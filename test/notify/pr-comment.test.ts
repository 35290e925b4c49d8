// `converge comment` against a GitHub-shaped and a GitLab-shaped comment API on loopback: one comment, created once and
// updated in place; refusals in one line; 5xx and rate limits retried; the token in no output.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { runCapture, type CliResult } from '../helpers/cli.js';
import { startCommentHost, type CommentHost } from '../helpers/comment-host.js';
import { internalDockerYaml } from '../helpers/manifests.js';
import { dropPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

const TOKEN = 'ghs_commentTestToken0123456789abcdef';
const REPOSITORY = 'acme/manifests';
const PULL = 7;
const prefix = testPrefix('pr-comment');

let emulator: RunningEmulator;
let dir: string;
/** Every output of every run, for the check that the token is in none of them. */
const outputs: CliResult[] = [];

beforeAll(async () => {
  emulator = await startEmulator({ seed: {} });
  dir = await mkdtemp(join(tmpdir(), 'converge-comment-'));
});
afterAll(async () => {
  await emulator.close();
  await rm(dir, { recursive: true, force: true });
  await dropPrefix(prefix);
});

/** A saved plan of one deployment at `maxScale`, written to `file` by `converge plan --out`. */
async function savePlan(file: string, maxScale: number): Promise<string> {
  const manifests = join(dir, `manifests-${maxScale}`);
  await rm(manifests, { recursive: true, force: true });
  await import('node:fs/promises').then((fs) => fs.mkdir(manifests, { recursive: true }));
  await writeFile(join(manifests, 'api.yaml'), internalDockerYaml('comment-api', maxScale));
  const path = join(dir, file);
  const planned = await runCapture(['plan', manifests, '--out', path, '--api-url', emulator.url], {
    NO_COLOR: '1',
    REDIS_URL,
    CONVERGE_REDIS_PREFIX: prefix,
    CONVERGE_API_KEY: 'k',
  });
  expect(planned.code, planned.stderr).toBe(0);
  return path;
}

let planA: string;
let planB: string;
beforeAll(async () => {
  planA = await savePlan('a.plan', 3);
  planB = await savePlan('b.plan', 5);
});

/** The CI environment each shape's runner sets, pointing at `host`. */
function ciEnv(shape: 'github' | 'gitlab', host: CommentHost, commit: string): Record<string, string> {
  if (shape === 'gitlab')
    return {
      CI_API_V4_URL: host.apiUrl,
      CI_PROJECT_PATH: REPOSITORY,
      CI_MERGE_REQUEST_IID: String(PULL),
      CI_COMMIT_SHA: commit,
      CI_JOB_URL: 'https://gitlab.example/acme/manifests/-/jobs/42',
      GITLAB_TOKEN: TOKEN,
    };
  return {
    GITHUB_API_URL: host.apiUrl,
    GITHUB_REPOSITORY: REPOSITORY,
    GITHUB_TOKEN: TOKEN,
    GITHUB_SERVER_URL: 'https://github.example',
    GITHUB_RUN_ID: '99',
    GITHUB_EVENT_PATH: join(dir, `event-${commit}.json`),
  };
}

async function comment(
  shape: 'github' | 'gitlab',
  host: CommentHost,
  plan: string,
  commit: string,
  extra: string[] = [],
): Promise<CliResult> {
  if (shape === 'github')
    await writeFile(
      join(dir, `event-${commit}.json`),
      JSON.stringify({ action: 'synchronize', number: PULL, pull_request: { number: PULL, head: { sha: commit } } }),
    );
  const result = await runCapture(
    ['comment', '--plan', plan, ...(shape === 'gitlab' ? ['--api', 'gitlab'] : []), ...extra],
    ciEnv(shape, host, commit),
  );
  outputs.push(result);
  return result;
}

const SHA1 = 'a1'.repeat(20);
const SHA2 = 'b2'.repeat(20);

describe.each(['github', 'gitlab'] as const)('converge comment --api %s', { timeout: 90_000 }, (shape) => {
  let host: CommentHost;
  beforeAll(async () => {
    host = await startCommentHost(shape, {
      repository: REPOSITORY,
      pull: PULL,
      token: TOKEN,
      otherComments: ['LGTM', '<!-- someone else -->\nnot ours'],
    });
  });
  afterAll(() => host.close());

  it('creates one comment, updates that same comment on a new push and on a changed plan, and sends nothing when it already says the plan', async () => {
    const first = await comment(shape, host, planA, SHA1);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/comment \d+ on acme\/manifests.7 created/);
    const ours = () => host.comments.filter((c) => c.body.startsWith('<!-- converge-plan -->\n'));
    expect(ours()).toHaveLength(1);
    const id = ours()[0]!.id;
    expect(ours()[0]!.body).toContain('comment-api');
    expect(ours()[0]!.body).toContain(SHA1.slice(0, 12));
    expect(ours()[0]!.body).toContain('max_scale');
    expect(host.writes().map((w) => w.method)).toEqual(['POST']);

    const second = await comment(shape, host, planA, SHA2);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain(`comment ${id} `);
    expect(second.stdout).toContain('updated');
    expect(ours()).toHaveLength(1);
    expect(ours()[0]!.body).toContain(SHA2.slice(0, 12));

    const third = await comment(shape, host, planB, SHA2);
    expect(third.code, third.stderr).toBe(0);
    expect(third.stdout).toContain('updated');
    expect(ours()).toHaveLength(1);
    expect(ours()[0]!.id).toBe(id);
    expect(ours()[0]!.body).toMatch(/max_scale[^\n]*5/);
    expect(host.writes().map((w) => w.method)).toEqual([
      'POST',
      shape === 'gitlab' ? 'PUT' : 'PATCH',
      shape === 'gitlab' ? 'PUT' : 'PATCH',
    ]);

    const again = await comment(shape, host, planB, SHA2);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('already says this plan');
    expect(host.writes()).toHaveLength(3);
    // Someone else's comments are left as they were.
    expect(host.comments.map((c) => c.body)).toEqual(
      expect.arrayContaining(['LGTM', '<!-- someone else -->\nnot ours']),
    );
    for (const request of host.requests) expect(request.headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('--key keeps a second comment beside the first', async () => {
    const keyed = await comment(shape, host, planA, SHA1, ['--key', 'staging']);
    expect(keyed.code, keyed.stderr).toBe(0);
    expect(host.comments.filter((c) => c.body.startsWith('<!-- converge-plan'))).toHaveLength(2);
  });

  it('a 403 is one line and exit 1, nothing written', async () => {
    const writes = host.writes().length;
    host.overrides.push({ method: 'GET', status: 403, body: { message: 'Resource not accessible by integration' } });
    const refused = await comment(shape, host, planB, SHA1);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(refused.stderr).toMatch(
      /^converge comment: \w+ answered 403 to GET \S+ \("Resource not accessible by integration"\): the token in (GITHUB|GITLAB)_TOKEN may not comment there/,
    );
    expect(host.writes()).toHaveLength(writes);
  });

  it('a wrong token (401) and a wrong pull request (404) are one line each', async () => {
    const bad = await runCapture(
      [
        'comment',
        '--plan',
        planA,
        ...(shape === 'gitlab' ? ['--api', 'gitlab'] : []),
        '--token-env',
        'OTHER_TOKEN',
        '--pull',
        '7',
      ],
      { ...ciEnv(shape, host, SHA1), OTHER_TOKEN: 'wrong-token-value' },
    );
    outputs.push(bad);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/answered 401 .*the token in OTHER_TOKEN was not accepted/);
    expect(bad.stderr).not.toContain('wrong-token-value');
    const missing = await comment(shape, host, planA, SHA1, ['--pull', '8']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/answered 404 .*check --repository acme\/manifests, --pull 8/);
  });

  it('a 502 on the create, then 201: the comment is written once', async () => {
    const fresh = await startCommentHost(shape, { repository: REPOSITORY, pull: PULL, token: TOKEN });
    try {
      fresh.overrides.push({ method: 'POST', status: 502 });
      const result = await comment(shape, fresh, planA, SHA1);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain('created');
      expect(fresh.requests.filter((r) => r.method === 'POST').map((r) => r.status)).toEqual([502, 201]);
      expect(fresh.comments.filter((c) => c.body.startsWith('<!-- converge-plan -->'))).toHaveLength(1);
    } finally {
      await fresh.close();
    }
  });

  it('a rate limit (429 with Retry-After, a 403 with no requests left) is waited out', async () => {
    host.overrides.push({ method: 'GET', status: 429, headers: { 'retry-after': '0' } });
    host.overrides.push({
      method: 'GET',
      status: 403,
      headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(Math.floor(Date.now() / 1000)) },
    });
    const result = await comment(shape, host, planA, SHA2);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('updated');
  });

  it('a host that stays at 503 ends in one line after its bounded tries', async () => {
    for (let i = 0; i < 5; i += 1) host.overrides.push({ method: 'GET', status: 503, headers: { 'retry-after': '0' } });
    const result = await comment(shape, host, planB, SHA1);
    expect(result.code).toBe(1);
    expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/answered 503 to GET \S+, 5 tries: the host is unavailable/);
    expect(host.overrides).toHaveLength(0);
  });
});

describe('converge comment: input', () => {
  it('names what is missing in one line', async () => {
    const noToken = await runCapture(
      ['comment', '--plan', join(dir, 'a.plan'), '--repository', 'a/b', '--pull', '1'],
      {},
    );
    expect(noToken.code).toBe(1);
    expect(noToken.stderr).toBe(
      'converge comment: no token: the environment variable GITHUB_TOKEN is not set or empty (name another with --token-env NAME)\n',
    );
    const noPull = await runCapture(['comment', '--plan', join(dir, 'a.plan'), '--api', 'gitlab'], {
      CI_PROJECT_PATH: 'g/p',
      CI_API_V4_URL: 'http://127.0.0.1:9/api/v4',
      GITLAB_TOKEN: TOKEN,
    });
    expect(noPull.stderr).toMatch(/no merge request: CI_MERGE_REQUEST_IID is set only in merge request pipelines/);
    // Outside GitHub Actions (no event file), the line says so instead of speaking of an event.
    const noEvent = await runCapture(['comment', '--plan', join(dir, 'a.plan'), '--repository', 'a/b'], {
      GITHUB_TOKEN: TOKEN,
    });
    expect(noEvent.code).toBe(1);
    expect(noEvent.stderr).toBe(
      'converge comment: no pull request: GITHUB_EVENT_PATH is not set (it is set in GitHub Actions runs only); give --pull N\n',
    );
    const badApi = await runCapture(['comment', '--plan', 'x', '--api', 'bitbucket'], {});
    expect(badApi.stderr).toMatch(/--api "bitbucket" is not one of github, gitlab/);
    outputs.push(noToken, noPull, noEvent, badApi);
  });
});

afterAll(() => {
  // The token, in every output of every run above.
  expect(outputs.length).toBeGreaterThan(10);
  for (const output of outputs) {
    expect(output.stdout).not.toContain(TOKEN);
    expect(output.stderr).not.toContain(TOKEN);
  }
});
