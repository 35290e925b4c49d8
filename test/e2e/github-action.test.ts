// The composite action action.yml, its steps run as GitHub's runner runs them (test/e2e/action-runner.ts), with the
// environment GitHub Actions sets and a pull_request event file, against the emulator, Redis and a GitHub-shaped comment
// API on loopback: a pull request's plan, its artifact and one comment updated in place over three pushes; after the
// merge, the reviewed plan fetched and applied once, and refused as stale the second time.
// npm and gh are played by recording shims (they need the registry and github.com): the test checks what the steps ask of them.
import { chmod, cp, mkdir, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import { seedWith, writes } from '../helpers/apply.js';
import { startCommentHost } from '../helpers/comment-host.js';
import { readAction, runAction, type ActionRun, type PlayUses } from './action-runner.js';
import { dockerDeploymentYaml, MAIN, REDIS_URL, ROOT, runConverge, tempDir, writeFiles } from './helpers.js';
import { atEnd, prefixOf } from './scoped.js';

const TOKEN = 'ghs_actionTestToken9f8e7d6c5b4a';
const REPOSITORY = 'acme/manifests';
const PULL = 12;
const sha = (c: string) => c.repeat(40);

const NPM_SHIM = '#!/usr/bin/env bash\necho "npm $*" >> "$SHIM_LOG"\n';
const GH_SHIM = `#!/usr/bin/env bash
echo "gh $*" >> "$SHIM_LOG"
[ -n "$GH_TOKEN" ] || { echo "gh: GH_TOKEN is not set" >&2; exit 4; }
case "$1 $2" in
  "api repos/"*) echo "$FAKE_HEAD" ;;
  "run list") echo 4242 ;;
  "run download") [ "$3" = 4242 ] && [ "$4" = --name ] && [ "$6" = --dir ] && cp "$FAKE_ARTIFACTS/$5/"* "$7/" ;;
  *) exit 5 ;;
esac
`;

/** Every output of every step of the runs. */
/**
 * The action's checkout under `root`: this repository's sources, and the run's build as its dist/ (a restored cache);
 * and a folder of executable shims (name -> script) to put first on the PATH.
 */
async function actionCheckout(
  root: string,
  shims: Record<string, string>,
): Promise<{ actionPath: string; bin: string }> {
  const actionPath = join(root, 'action');
  await mkdir(actionPath);
  for (const entry of [
    'action.yml',
    'package.json',
    'package-lock.json',
    'tsconfig.json',
    'tsconfig.build.json',
    'scripts',
    'src',
  ])
    await symlink(join(ROOT, entry), join(actionPath, entry));
  await symlink(dirname(dirname(MAIN)), join(actionPath, 'dist'));
  const bin = join(root, 'shims');
  await mkdir(bin);
  for (const [name, script] of Object.entries(shims)) {
    await writeFile(join(bin, name), script);
    await chmod(join(bin, name), 0o755);
  }
  return { actionPath, bin };
}

function allOutput(runs: ActionRun[]): string {
  return runs.flatMap((r) => r.steps.map((s) => s.stdout + s.stderr)).join('\n');
}

describe('the converge action (action.yml)', { timeout: 300_000 }, () => {
  it('plans on a pull request with one comment updated in place, then applies the reviewed plan after the merge, once', async (t) => {
    const e = await startEmulator({
      seed: seedWith([
        {
          name: 'ci-api',
          source: 'external_docker',
          source_config: { resource_spec: { max_scale: 1 } },
          source_revision_config: { image_uri: 'docker.io/acme/ci-api:1' },
        },
      ]),
      buildMs: 0,
    });
    atEnd(t, () => e.close());
    const host = await startCommentHost('github', { repository: REPOSITORY, pull: PULL, token: TOKEN });
    atEnd(t, () => host.close());
    const root = await tempDir('github-action');
    atEnd(t, () => rm(root, { recursive: true, force: true }));
    const prefix = prefixOf(t, 'github-action');

    const { actionPath, bin } = await actionCheckout(root, { npm: NPM_SHIM, gh: GH_SHIM });
    const shimLog = join(root, 'shims.log');
    const artifacts = join(root, 'artifacts');
    const action = await readAction(join(ROOT, 'action.yml'));

    let cacheHit = 'true';
    const cacheKeys: string[] = [];
    const playUses: PlayUses = async (step, withValues): Promise<Record<string, string>> => {
      if (step.uses!.startsWith('actions/cache@')) {
        cacheKeys.push(withValues.key!);
        expect(withValues.path).toBe(`${actionPath}/dist`);
        return { 'cache-hit': cacheHit };
      }
      if (step.uses!.startsWith('actions/upload-artifact@')) {
        await mkdir(join(artifacts, withValues.name!), { recursive: true });
        await cp(join(workspace, withValues.path!), join(artifacts, withValues.name!, basename(withValues.path!)));
      }
      return {};
    };
    let workspace = '';
    const runs: ActionRun[] = [];

    /** The action run as GitHub runs it on `event` in a checkout holding `files`. */
    async function run(
      event: 'pull_request' | 'push',
      headSha: string,
      files: Record<string, string>,
      given: Record<string, string>,
    ): Promise<ActionRun> {
      workspace = join(root, `checkout-${event}-${headSha.slice(0, 4)}-${runs.length}`);
      await writeFiles(workspace, files);
      const temp = join(root, `runner-temp-${runs.length}`);
      await mkdir(temp);
      await writeFile(shimLog, '');
      const payload =
        event === 'pull_request'
          ? { action: 'synchronize', number: PULL, pull_request: { number: PULL, head: { sha: headSha } } }
          : { ref: 'refs/heads/main', after: sha('f') };
      const eventPath = join(temp, 'event.json');
      await writeFile(eventPath, JSON.stringify(payload));
      const commit = event === 'pull_request' ? sha('e') : sha('f');
      const env = {
        PATH: [bin, dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(':'),
        HOME: process.env.HOME,
        NO_COLOR: '1',
        CI: 'true',
        GITHUB_ACTIONS: 'true',
        GITHUB_ACTION_PATH: actionPath,
        GITHUB_EVENT_NAME: event,
        GITHUB_EVENT_PATH: eventPath,
        GITHUB_REPOSITORY: REPOSITORY,
        GITHUB_API_URL: host.apiUrl,
        GITHUB_SERVER_URL: 'https://github.example',
        GITHUB_RUN_ID: String(100 + runs.length),
        GITHUB_SHA: commit,
        GITHUB_WORKFLOW_REF: `${REPOSITORY}/.github/workflows/converge.yml@refs/heads/main`,
        GITHUB_WORKSPACE: workspace,
        RUNNER_OS: 'Linux',
        RUNNER_TEMP: temp,
        SHIM_LOG: shimLog,
        FAKE_HEAD: headSha,
        FAKE_ARTIFACTS: artifacts,
      };
      const github = {
        event_name: event,
        event: payload,
        sha: commit,
        repository: REPOSITORY,
        action_path: actionPath,
        token: TOKEN,
        workspace,
      };
      const settings = { 'api-url': e.url, 'api-key': 'ci-key', 'redis-url': REDIS_URL, 'redis-prefix': prefix };
      const result = await runAction(action, {
        given: { ...settings, ...given },
        github,
        env,
        workspace,
        temp,
        playUses,
      });
      runs.push(result);
      return result;
    }
    const shimCalls = async () => (await readFile(shimLog, 'utf8')).trim().split('\n').filter(Boolean);
    const ours = () => host.comments.filter((c) => c.body.startsWith('<!-- converge-plan -->\n'));
    const filesAt = (maxScale: number) => ({ 'manifests/api.yaml': dockerDeploymentYaml('ci-api', { maxScale }) });

    // The pull request's first push: a plan, its artifact, one comment; nothing written to the service.
    const first = await run('pull_request', sha('1'), filesAt(3), { command: 'plan' });
    expect(first.code, JSON.stringify(first.steps, null, 1)).toBe(0);
    expect(first.outputs).toEqual({
      changes: 'yes',
      'plan-file': 'converge.plan',
      artifact: `converge-plan-${sha('1')}`,
    });
    expect(first.steps.filter((s) => s.skipped).map((s) => s.label)).toEqual([
      'Fetch the plan reviewed in the pull request',
      'Apply the reviewed plan',
    ]);
    expect(await shimCalls()).toEqual(['npm ci --omit=dev --no-audit --no-fund']);
    expect(cacheKeys[0]).toMatch(/^converge-dist-Linux-node\d+-[0-9a-f]{40}$/);
    expect(await readdir(join(artifacts, `converge-plan-${sha('1')}`))).toEqual(['converge.plan']);
    expect(ours()).toHaveLength(1);
    const id = ours()[0]!.id;
    expect(ours()[0]!.body).toContain(`for \`${sha('1').slice(0, 12)}\``);
    expect(ours()[0]!.body).toContain('ci-api');
    expect(ours()[0]!.body).toContain(`artifact \`converge-plan-${sha('1')}\``);
    expect(writes(e.requestLog)).toHaveLength(0);

    // Two more pushes, the second with a changed manifest: the same comment, updated each time.
    expect((await run('pull_request', sha('2'), filesAt(3), { command: 'plan' })).code).toBe(0);
    const third = await run('pull_request', sha('3'), filesAt(5), { command: 'plan' });
    expect(third.code).toBe(0);
    expect(ours()).toHaveLength(1);
    expect(ours()[0]!.id).toBe(id);
    expect(ours()[0]!.body).toContain(`for \`${sha('3').slice(0, 12)}\``);
    expect(host.writes().map((w) => w.method)).toEqual(['POST', 'PATCH', 'PATCH']);
    expect(cacheKeys.every((k) => k === cacheKeys[0])).toBe(true);

    // The merge: a push to main, no dist/ in the cache; the plan reviewed on the pull request's head is fetched and applied.
    cacheHit = '';
    const apply = await run('push', sha('3'), filesAt(5), { command: 'apply' });
    expect(apply.code, JSON.stringify(apply.steps, null, 1)).toBe(0);
    expect(apply.steps.find((s) => s.label === 'Comment the plan (one comment, updated in place)')!.skipped).toBe(true);
    expect(await shimCalls()).toEqual([
      'npm ci --no-audit --no-fund',
      'npm run build',
      'npm ci --omit=dev --no-audit --no-fund',
      `gh api repos/${REPOSITORY}/commits/${sha('f')}/pulls --jq .[0].head.sha`,
      `gh run list --workflow converge.yml --commit ${sha('3')} --event pull_request --status success --json databaseId --jq .[0].databaseId`,
      `gh run download 4242 --name converge-plan-${sha('3')} --dir .`,
    ]);
    expect(writes(e.requestLog).map((w) => `${w.method} ${w.route}`)).toEqual([
      'PATCH /v2/deployments/{deployment_id}',
    ]);
    expect(host.writes()).toHaveLength(3);

    // The job run again: the same reviewed plan, fetched again, is stale (it was applied); the step fails, nothing is written.
    const again = await run('push', sha('3'), filesAt(5), { command: 'apply' });
    expect(again.code).toBe(1);
    expect(again.steps.at(-1)!.label).toBe('Apply the reviewed plan');
    expect(again.steps.at(-1)!.stderr).toMatch(/the plan is stale: since it was made, it was applied/);
    expect(writes(e.requestLog)).toHaveLength(1);
    expect(allOutput(runs)).not.toContain(TOKEN);
  });

  it("plan with applied-state-url asks the daemon's GET /applied-state with state-token, and reads no Redis", async (t) => {
    const e = await startEmulator({
      seed: seedWith([
        {
          name: 'ci-state',
          source: 'external_docker',
          source_config: { resource_spec: { max_scale: 1 } },
          source_revision_config: { image_uri: 'docker.io/acme/ci-state:1' },
        },
      ]),
      buildMs: 0,
    });
    atEnd(t, () => e.close());
    // The daemon's endpoint, played on loopback: it records each request and serves an applied state with no record.
    const asked: string[] = [];
    const daemon = createServer((req, res) => {
      asked.push(`${req.method} ${req.url} ${req.headers.authorization}`);
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ format: 'converge-applied-state', format_version: 1, records: {}, holds: {} }));
    });
    await new Promise<void>((resolve) => daemon.listen(0, '127.0.0.1', resolve));
    atEnd(t, () => new Promise((resolve) => daemon.close(resolve)));
    const root = await tempDir('github-action-state');
    atEnd(t, () => rm(root, { recursive: true, force: true }));
    const { actionPath, bin } = await actionCheckout(root, { npm: NPM_SHIM });
    const workspace = join(root, 'checkout');
    await writeFiles(workspace, { 'manifests/api.yaml': dockerDeploymentYaml('ci-state', { maxScale: 3 }) });
    const eventPath = join(root, 'event.json');
    await writeFile(eventPath, '{}');
    const env = {
      PATH: [bin, dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(':'),
      HOME: process.env.HOME,
      NO_COLOR: '1',
      GITHUB_ACTION_PATH: actionPath,
      GITHUB_EVENT_PATH: eventPath,
      GITHUB_WORKSPACE: workspace,
      RUNNER_OS: 'Linux',
      RUNNER_TEMP: root,
      SHIM_LOG: join(root, 'shims.log'),
    };
    const address = daemon.address() as AddressInfo;
    // No route to Redis from this runner: a plan that read it would fail.
    const given = {
      command: 'plan',
      comment: 'false',
      'api-url': e.url,
      'api-key': 'ci-key',
      'redis-url': 'redis://127.0.0.1:1',
      'applied-state-url': `http://127.0.0.1:${address.port}`,
      'state-token': 'state-token-of-ci-5h2',
    };
    const github = {
      event_name: 'pull_request',
      event: {},
      sha: sha('9'),
      repository: REPOSITORY,
      action_path: actionPath,
      token: TOKEN,
      workspace,
    };
    const playUses: PlayUses = async (step): Promise<Record<string, string>> =>
      step.uses!.startsWith('actions/cache@') ? { 'cache-hit': 'true' } : {};
    const result = await runAction(await readAction(join(ROOT, 'action.yml')), {
      given,
      github,
      env,
      workspace,
      temp: root,
      playUses,
    });
    expect(result.code, JSON.stringify(result.steps, null, 1)).toBe(0);
    expect(result.outputs.changes).toBe('yes');
    expect(asked).toEqual(['GET /applied-state Bearer state-token-of-ci-5h2']);
    expect(allOutput([result])).not.toContain('state-token-of-ci-5h2');
  });

  it('apply after a merge: a failed build that stands from earlier manifests is a warning, and strict: true fails the step', async (t) => {
    const e = await startEmulator({ buildMs: 0, buildFail: /^ci-flaky$/ });
    atEnd(t, () => e.close());
    const root = await tempDir('github-action-strict');
    atEnd(t, () => rm(root, { recursive: true, force: true }));
    const prefix = prefixOf(t, 'github-action-strict');
    const { actionPath, bin } = await actionCheckout(root, { npm: NPM_SHIM });
    const action = await readAction(join(ROOT, 'action.yml'));
    const settings = {
      'api-url': e.url,
      'api-key': 'ci-key',
      'redis-url': REDIS_URL,
      'redis-prefix': prefix,
      comment: 'false',
    };
    const playUses: PlayUses = async (step): Promise<Record<string, string>> =>
      step.uses!.startsWith('actions/cache@') ? { 'cache-hit': 'true' } : {};
    const filesAt = (teamScale: number) => ({
      'manifests/flaky.yaml': dockerDeploymentYaml('ci-flaky', { maxScale: 1 }),
      'manifests/team.yaml': dockerDeploymentYaml('ci-team', { maxScale: teamScale }),
    });
    /** A pull request's plan, then the merge's apply of it in the same checkout (the plan already there). */
    async function planThenApply(n: number, teamScale: number, given: Record<string, string>): Promise<ActionRun> {
      const workspace = join(root, `checkout-${n}`);
      await writeFiles(workspace, filesAt(teamScale));
      const env = {
        PATH: [bin, dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(':'),
        HOME: process.env.HOME,
        NO_COLOR: '1',
        GITHUB_ACTION_PATH: actionPath,
        GITHUB_WORKSPACE: workspace,
        RUNNER_OS: 'Linux',
        RUNNER_TEMP: root,
        SHIM_LOG: join(root, 'shims.log'),
      };
      const github = (event: string) => ({
        event_name: event,
        event: {},
        sha: sha(String(n)),
        repository: REPOSITORY,
        action_path: actionPath,
        token: TOKEN,
        workspace,
      });
      const plan = await runAction(action, {
        given: { ...settings, command: 'plan' },
        github: github('pull_request'),
        env,
        workspace,
        temp: root,
        playUses,
      });
      expect(plan.code, JSON.stringify(plan.steps, null, 1)).toBe(0);
      return runAction(action, {
        given: { ...settings, command: 'apply', ...given },
        github: github('push'),
        env,
        workspace,
        temp: root,
        playUses,
      });
    }
    const applyStep = (run: ActionRun) => run.steps.find((s) => s.label === 'Apply the reviewed plan')!;

    // An earlier apply: ci-flaky's build failed (that apply's own failure, exit 1).
    const first = join(root, 'checkout-1');
    await writeFiles(first, filesAt(1));
    const earlier = await runConverge([
      'apply',
      join(first, 'manifests'),
      '--wait',
      '--api-url',
      e.url,
      '--redis-prefix',
      prefix,
    ]);
    expect(earlier.code).toBe(1);
    expect(earlier.stdout).toMatch(/revision failed: Deployment\/ci-flaky \S+ BUILD_FAILED/);
    // A merge that changes only ci-team: green, with one warning line naming ci-flaky and the command that releases it.
    const later = await planThenApply(2, 2, {});
    expect(later.code, JSON.stringify(later.steps, null, 1)).toBe(0);
    const warnings = applyStep(later)
      .stdout.split('\n')
      .filter((line) => line.trimStart().startsWith('warning'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /Deployment\/ci-flaky: revision \S+ BUILD_FAILED stands from manifests content [0-9a-f]+, not from this apply.*converge reconcile --retry-failed ci-flaky/,
    );
    // strict: true: the same kind of merge fails the step on the degraded resource.
    const strict = await planThenApply(3, 3, { strict: 'true' });
    expect(strict.code).toBe(1);
    expect(applyStep(strict).stdout).toMatch(/^Apply incomplete: .*revision failed: Deployment\/ci-flaky/m);
    expect(writes(e.requestLog).filter((w) => w.route.startsWith('/v2/deployments/')).length).toBe(2);
  });

  it('an unknown command fails the first step with one line', async (t) => {
    const root = await tempDir('github-action-input');
    atEnd(t, () => rm(root, { recursive: true, force: true }));
    const action = await readAction(join(ROOT, 'action.yml'));
    const env = { PATH: process.env.PATH, GITHUB_OUTPUT: '' };
    const result = await runAction(action, {
      given: { command: 'deploy' },
      github: { event_name: 'push', sha: sha('a'), event: {} },
      env,
      workspace: root,
      temp: root,
      playUses: async () => ({}),
    });
    expect(result.code).toBe(1);
    expect(result.steps).toHaveLength(1);
    expect(result.steps[0]!.stdout).toBe('::error::converge action: input command is "deploy"; give plan or apply\n');
  });
});
