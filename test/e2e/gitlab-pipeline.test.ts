// The example GitLab pipeline examples/ci/.gitlab-ci.yml: its plan job's script, read from the file, run in bash with the
// variables GitLab CI sets in a merge request pipeline, against the emulator and a GitLab-shaped notes API on loopback,
// `converge` being the built binary: one note, created on the first pipeline and updated on the next.
import { spawn } from 'node:child_process';
import { readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startEmulator } from '../../src/emulator/server.js';
import { seedWith, writes } from '../helpers/apply.js';
import { startCommentHost } from '../helpers/comment-host.js';
import { dockerDeploymentYaml, MAIN, REDIS_URL, ROOT, tempDir, writeFiles } from './helpers.js';
import { atEnd, prefixOf } from './scoped.js';

const TOKEN = 'glpat-pipelineTest0123456789';
const pipeline = parse(await readFile(join(ROOT, 'examples/ci/.gitlab-ci.yml'), 'utf8')) as {
  variables: Record<string, string>;
  plan: { script: string[] };
};

/** The job's script lines in one shell that stops at the first failing line, as GitLab's runner does. */
function runScript(
  lines: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const script = `set -eo pipefail\nconverge() { node ${JSON.stringify(MAIN)} "$@"; }\n${lines.join('\n')}`;
    const child = spawn('bash', ['-c', script], {
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

describe('the example GitLab pipeline (examples/ci/.gitlab-ci.yml)', { timeout: 180_000 }, () => {
  it('the merge request pipeline plans and keeps one note, updated in place', async (t) => {
    const e = await startEmulator({ seed: seedWith([]), buildMs: 0 });
    atEnd(t, () => e.close());
    const host = await startCommentHost('gitlab', { repository: 'acme/infra/manifests', pull: 4, token: TOKEN });
    atEnd(t, () => host.close());
    const root = await tempDir('gitlab-pipeline');
    atEnd(t, () => rm(root, { recursive: true, force: true }));
    const env = {
      ...pipeline.variables,
      REDIS_URL,
      CONVERGE_REDIS_PREFIX: prefixOf(t, 'gitlab-pipeline'),
      CONVERGE_API_URL: e.url,
      CONVERGE_API_KEY: 'ci-key',
      GITLAB_TOKEN: TOKEN,
      GITLAB_CI: 'true',
      CI_PIPELINE_SOURCE: 'merge_request_event',
      CI_API_V4_URL: host.apiUrl,
      CI_PROJECT_PATH: 'acme/infra/manifests',
      CI_MERGE_REQUEST_IID: '4',
      CI_JOB_URL: 'https://gitlab.example/acme/infra/manifests/-/jobs/77',
    };
    const manifests = pipeline.variables.MANIFESTS!;
    for (const [n, maxScale] of [
      [1, 2],
      [2, 4],
    ] as const) {
      const dir = join(root, `pipeline-${n}`);
      await writeFiles(dir, { [`${manifests}/api.yaml`]: dockerDeploymentYaml('gl-api', { maxScale }) });
      const result = await runScript(pipeline.plan.script, dir, { ...env, CI_COMMIT_SHA: String(n).repeat(40) });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain(n === 1 ? 'created' : 'updated');
      expect((await stat(join(dir, 'converge.plan'))).isFile()).toBe(true);
      expect(result.stdout + result.stderr).not.toContain(TOKEN);
    }
    const notes = host.comments.filter((c) => c.body.startsWith('<!-- converge-plan -->\n'));
    expect(notes).toHaveLength(1);
    expect(notes[0]!.body).toContain('gl-api');
    expect(notes[0]!.body).toContain(
      'artifact `converge.plan` of https://gitlab.example/acme/infra/manifests/-/jobs/77',
    );
    expect(host.writes().map((w) => `${w.method} ${w.path}`)).toEqual([
      'POST /api/v4/projects/acme%2Finfra%2Fmanifests/merge_requests/4/notes',
      `PUT /api/v4/projects/acme%2Finfra%2Fmanifests/merge_requests/4/notes/${notes[0]!.id}`,
    ]);
    expect(writes(e.requestLog)).toHaveLength(0);
  });
});
