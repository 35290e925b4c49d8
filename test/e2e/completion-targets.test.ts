// Completion of --target (issue 42, item 12): the bash script asks the built CLI for the names declared in the manifest
// directory of the line being typed, in a real bash; a line without a readable directory offers nothing, silently.
import { execFile } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { providerYaml } from '../helpers/apply.js';
import { internalDockerYaml } from '../helpers/manifests.js';
import { MAIN, runConverge, tempDir, writeFiles } from './helpers.js';

/** Runs bash -c `script` in `cwd` with a bare environment; its exit code and output. */
function bash(script: string, cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile('bash', ['-c', script], { cwd, env: { PATH: process.env.PATH, HOME: process.env.HOME } }, (error, stdout, stderr) => {
      done({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

describe('completion of --target names', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir('completion-targets');
    await mkdir(join(dir, 'manifests', 'team'), { recursive: true });
    await mkdir(join(dir, 'overlays'));
    await writeFiles(join(dir, 'manifests'), {
      'web.yaml': internalDockerYaml('web', 1),
      'team/worker.yaml': internalDockerYaml('worker', 1),
      // a provider of the same name as a deployment: each is offered as Kind/NAME
      'providers.yaml': providerYaml('web', 'WEB_CLIENT_SECRET'),
      // a broken manifest still names what it declares (its resource is blocked, and --target takes it)
      'broken.yaml': 'apiVersion: converge/v1\nkind: Deployment\nmetadata:\n  name: broken\nspec:\n  source: internal_docker\n  replicas: 2\n',
    });
    const script = await runConverge(['completion', 'bash']);
    expect(script.code, script.stderr).toBe(0);
    await writeFile(join(dir, 'converge.bash'), script.stdout);
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('offers the names of the line\'s manifest directory, after any flags; nothing without one', { timeout: 120_000 }, async () => {
    const cases = [
      ['converge', 'plan', 'manifests', '--target', ''],
      ['converge', 'apply', 'manifests', '--target', 'w'],
      // the directory after flags and their values (--overlay DIR, --output FMT) and after a first --target
      ['converge', 'plan', '--overlay', 'overlays', '-o', 'json', 'manifests', '--target', 'web', '--target', 'wo'],
      ['converge', 'plan', '--output=json', 'manifests', '--target', 'b'],
      // no directory on the line, a missing one, a file: nothing, and no message
      ['converge', 'plan', '--target', ''],
      ['converge', 'plan', 'nowhere', '--target', ''],
      ['converge', 'plan', 'converge.bash', '--target', ''],
    ];
    const offer = 'offer() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _converge; printf \'%s \' "${COMPREPLY[@]}"; echo; }';
    const calls = cases.map((words) => `offer ${words.map((w) => JSON.stringify(w)).join(' ')}`).join('\n');
    const run = await bash(`converge() { ${JSON.stringify(process.execPath)} ${JSON.stringify(MAIN)} "$@"; }\nsource converge.bash\n${offer}\n${calls}`, dir);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const offered = run.stdout.split('\n').slice(0, cases.length).map((line) => line.split(' ').filter((w) => w !== '').sort());
    expect(offered).toEqual([
      ['Deployment/web', 'OAuthProvider/web', 'broken', 'worker'],
      ['worker'],
      ['worker'],
      ['broken'],
      [],
      [],
      [],
    ]);
  });

  it('converge completion --targets prints the names one a line, and nothing (exit 0) for what it cannot read', async () => {
    const listed = await runConverge(['completion', '--targets', '--', join(dir, 'manifests')]);
    expect(listed).toMatchObject({ code: 0, stdout: 'Deployment/web\nOAuthProvider/web\nbroken\nworker\n', stderr: '' });
    for (const args of [['--targets', '--', join(dir, 'nowhere')], ['--targets']]) {
      expect(await runConverge(['completion', ...args])).toMatchObject({ code: 0, stdout: '', stderr: '' });
    }
  });
});
