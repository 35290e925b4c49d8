// action.yml and the example workflows pass GitHub's own parser of their syntax (scripts/check-workflow-syntax.mjs, run
// by `npm run lint`), and the check fails on a broken copy; the example GitLab pipeline comments with --api gitlab.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const ROOT = join(import.meta.dirname, '../..');
const SCRIPT = join(ROOT, 'scripts/check-workflow-syntax.mjs');

/** The check's exit code and output for `files` (none: the repository's own). */
async function check(files: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [SCRIPT, ...files], { cwd: ROOT });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, output: e.stdout + e.stderr };
  }
}

describe('GitHub workflow syntax', () => {
  it('action.yml and every example workflow are valid', async () => {
    const { code, output } = await check([]);
    expect(output).toContain(
      '3 files in valid GitHub workflow syntax (action.yml, examples/ci/converge-action.yml, examples/ci/converge.yml)',
    );
    expect(code).toBe(0);
  });

  it('a misspelt key or an unknown context is an error, with its line', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'converge-workflow-syntax-'));
    try {
      await writeFile(
        join(dir, 'action.yml'),
        (await readFile(join(ROOT, 'action.yml'), 'utf8')).replace('shell: bash', 'shel: bash'),
      );
      await writeFile(
        join(dir, 'workflow.yml'),
        (await readFile(join(ROOT, 'examples/ci/converge-action.yml'), 'utf8')).replace(
          "github.event_name == 'push'",
          "gihtub.event_name == 'push'",
        ),
      );
      const { code, output } = await check([join(dir, 'action.yml'), join(dir, 'workflow.yml')]);
      expect(code).toBe(1);
      expect(output).toMatch(/action\.yml \(Line: \d+, Col: \d+\): Unexpected value 'shel'/);
      expect(output).toMatch(/workflow\.yml \(Line: \d+, Col: \d+\): Unrecognized named-value: 'gihtub'/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('the example GitLab pipeline plans on merge requests, comments with --api gitlab and applies on the default branch', async () => {
    const pipeline = parse(await readFile(join(ROOT, 'examples/ci/.gitlab-ci.yml'), 'utf8')) as Record<
      string,
      { script?: string[]; rules?: Array<{ if: string }> }
    >;
    expect(pipeline.plan!.rules![0]!.if).toBe('$CI_PIPELINE_SOURCE == "merge_request_event"');
    expect(pipeline.plan!.script!.join('\n')).toMatch(/converge comment --api gitlab --plan converge.plan/);
    expect(pipeline.apply!.script!.join('\n')).toMatch(/converge apply --plan converge.plan --wait/);
  });
});
