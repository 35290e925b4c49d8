// The example workflow examples/ci/converge.yml, as docs/saved-plans.md walks through it: its "Plan" and "Apply the
// reviewed plan" steps, read from the file (so the test cannot drift from it), run in bash against the emulator with the
// built binary as `converge`; the steps GitHub runs itself (checkout, artifacts, the comment) are played by the test.
import { spawn } from 'node:child_process';
import { copyFile, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startEmulator } from '../../src/emulator/server.js';
import { seedWith, writes } from '../helpers/apply.js';
import { REDIS_URL } from '../helpers/redis.js';
import { dockerDeploymentYaml, MAIN, ROOT, tempDir, writeFiles } from './helpers.js';
import { atEnd, prefixOf } from './scoped.js';

interface Step {
  id?: string;
  run?: string;
}
interface Workflow {
  env: Record<string, string>;
  jobs: Record<string, { steps: Step[] }>;
}

const workflow = parse(await readFile(join(ROOT, 'examples/ci/converge.yml'), 'utf8')) as Workflow;

/** The script of the step `id` of `job`. */
function stepScript(job: string, id: string): string {
  const step = workflow.jobs[job]!.steps.find((s) => s.id === id);
  if (!step?.run) throw new Error(`examples/ci/converge.yml: job ${job} has no step with id ${id} and a run script`);
  return step.run;
}

/** Runs a step's script as GitHub's runner does (bash -e), `converge` being the built binary. */
function runStep(
  script: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn('bash', ['-e', '-c', `converge() { node ${JSON.stringify(MAIN)} "$@"; }\n${script}`], {
      cwd,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

describe('the example pull-request workflow (examples/ci/converge.yml)', { timeout: 90_000 }, () => {
  it('the pull request plans and renders the saved plan; after the merge, apply applies it once, and a re-run is refused as stale', async (t) => {
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
    const root = await tempDir('saved-plan-ci');
    atEnd(t, () => rm(root, { recursive: true, force: true }));
    // The workflow's env, with the values the repository's variables and secrets would give.
    expect(Object.keys(workflow.env)).toEqual(
      expect.arrayContaining(['CONVERGE_API_URL', 'REDIS_URL', 'CONVERGE_REDIS_PREFIX', 'OPENAI_API_KEY', 'MANIFESTS']),
    );
    const env = {
      ...workflow.env,
      CONVERGE_API_URL: e.url,
      CONVERGE_API_KEY: 'ci-key',
      REDIS_URL,
      CONVERGE_REDIS_PREFIX: prefixOf(t, 'saved-plan-ci'),
      OPENAI_API_KEY: 'sk-ci-secret-0f3d',
    };
    const files = {
      [`${workflow.env.MANIFESTS}/api.yaml`]: dockerDeploymentYaml('ci-api', { maxScale: 3 }),
      [`${workflow.env.MANIFESTS}/bot.yaml`]: dockerDeploymentYaml('ci-bot', {
        maxScale: 1,
        secrets: [['OPENAI_API_KEY', 'OPENAI_API_KEY']],
      }),
    };

    // The pull request's job, in its checkout.
    const pr = join(root, 'pr');
    await writeFiles(pr, files);
    const outputs = join(root, 'github-output');
    const plan = await runStep(stepScript('plan', 'plan'), pr, { ...env, GITHUB_OUTPUT: outputs });
    expect(plan.code, plan.stderr).toBe(0);
    expect(await readFile(outputs, 'utf8')).toBe('changes=yes\n');
    const markdown = await readFile(join(pr, 'plan-comment.markdown'), 'utf8');
    expect(markdown).toContain('ci-api');
    expect(markdown).toContain('ci-bot');
    expect((await stat(join(pr, 'converge.plan'))).mode & 0o777).toBe(0o600);
    expect(await readFile(join(pr, 'converge.plan'), 'utf8')).not.toContain(env.OPENAI_API_KEY);
    expect(writes(e.requestLog)).toHaveLength(0);

    // After the merge: another checkout of the same manifests, the artifact downloaded into it, the apply step.
    const main = join(root, 'main');
    await writeFiles(main, files);
    await copyFile(join(pr, 'converge.plan'), join(main, 'converge.plan'));
    const apply = await runStep(stepScript('apply', 'apply'), main, env);
    expect(apply.code, apply.stdout + apply.stderr).toBe(0);
    expect(
      writes(e.requestLog)
        .map((w) => `${w.method} ${w.route}`)
        .sort(),
    ).toEqual(['PATCH /v2/deployments/{deployment_id}', 'POST /v2/deployments']);

    // The job run again: the plan is stale, nothing is written.
    const again = await runStep(stepScript('apply', 'apply'), main, env);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/the plan is stale: since it was made, it was applied/);
    expect(writes(e.requestLog)).toHaveLength(2);
  });
});
