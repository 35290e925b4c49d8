// Completion of --target (issue 42, item 12): the bash, zsh and fish scripts ask the built CLI for the names declared in
// the manifest directory of the line being typed, each in a real shell; a line without a readable directory offers nothing, silently.
import { execFile } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { providerYaml } from '../helpers/apply.js';
import { internalDockerYaml } from '../helpers/manifests.js';
import { MAIN, runConverge, tempDir, writeFiles } from './helpers.js';

/** Runs `shell` -c `script` in `cwd` with a bare environment; its exit code and output. */
function bash(script: string, cwd: string, shell: 'bash' | 'zsh' | 'fish' = 'bash'): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(shell, ['-c', script], { cwd, env: { PATH: process.env.PATH, HOME: process.env.HOME } }, (error, stdout, stderr) => {
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

  // The lines of the bash case above, as each shell sees them: the words after "converge", and what it has typed of the name.
  const LINES: Array<{ words: string[]; typed: string; names: string[] }> = [
    { words: ['plan', 'manifests', '--target'], typed: '', names: ['Deployment/web', 'OAuthProvider/web', 'broken', 'worker'] },
    { words: ['plan', '--overlay', 'overlays', '-o', 'json', 'manifests', '--target', 'web', '--target'], typed: 'wo', names: ['worker'] },
    { words: ['plan', '--output=json', 'manifests', '--target'], typed: 'b', names: ['broken'] },
    { words: ['plan', '--target'], typed: '', names: [] },
    { words: ['plan', 'nowhere', '--target'], typed: '', names: [] },
  ];
  const converge = `${JSON.stringify(process.execPath)} ${JSON.stringify(MAIN)}`;

  it('zsh offers the same names (its _converge_targets, with compadd recording what it is given)', { timeout: 120_000 }, async () => {
    const script = await runConverge(['completion', 'zsh']);
    await writeFile(join(dir, 'converge.zsh'), script.stdout);
    // zsh filters by what is typed itself (compadd): the recorder keeps the names that match, as zsh would show them
    const calls = LINES.map(({ words, typed }) => `words=(${[...words, typed].map((w) => JSON.stringify(w)).join(' ')}); CURRENT=${words.length + 1}; offered=(); _converge_targets; print -r -- "\${(j: :)\${(@M)offered:#${typed}*}}"`).join('\n');
    const run = await bash(`converge() { ${converge} "$@"; }\ncompdef() { :; }\nsource converge.zsh\ncompadd() { [[ $1 == -a ]] && offered+=(\${(P)2}); }\n${calls}`, dir, 'zsh');
    expect(run.stderr).toBe('');
    const offered = run.stdout.split('\n').slice(0, LINES.length).map((line) => line.split(' ').filter((w) => w !== '').sort());
    expect(offered).toEqual(LINES.map((l) => l.names));
  });

  it('fish offers the same names (complete -C, as fish asks when Tab is pressed)', { timeout: 120_000 }, async () => {
    const script = await runConverge(['completion', 'fish']);
    await writeFile(join(dir, 'converge.fish'), script.stdout);
    const calls = LINES.map(({ words, typed }) => `echo (complete -C ${JSON.stringify(['converge', ...words, typed].join(' '))} | string replace -r '\\t.*' '')`).join('\n');
    const run = await bash(`function converge; ${converge} $argv; end\nsource converge.fish\n${calls}`, dir, 'fish');
    expect(run.stderr).toBe('');
    const offered = run.stdout.split('\n').slice(0, LINES.length).map((line) => line.split(' ').filter((w) => w !== '').sort());
    expect(offered).toEqual(LINES.map((l) => l.names));
  });

  it('converge completion --targets prints the names one a line, and nothing (exit 0) for what it cannot read', async () => {
    const listed = await runConverge(['completion', '--targets', '--', join(dir, 'manifests')]);
    expect(listed).toMatchObject({ code: 0, stdout: 'Deployment/web\nOAuthProvider/web\nbroken\nworker\n', stderr: '' });
    for (const args of [['--targets', '--', join(dir, 'nowhere')], ['--targets']]) {
      expect(await runConverge(['completion', ...args])).toMatchObject({ code: 0, stdout: '', stderr: '' });
    }
  });
});
