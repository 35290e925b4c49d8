// Completion of --target (issue 42, item 12) and of converge history's NAME (issue 51): the bash, zsh and fish scripts ask the built CLI for the names declared in
// the manifest directory of the line being typed, each in a real shell; a line without a readable directory offers nothing, silently.
import { execFile } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { providerYaml } from '../helpers/apply.js';
import { internalDockerYaml } from '../helpers/manifests.js';
import { closedPort, rawRedis } from '../helpers/redis.js';
import { dropPrefix, MAIN, REDIS_URL, runConverge, tempDir, testPrefix, writeFiles } from './helpers.js';

/** Runs `shell` -c `script` in `cwd` with a bare environment; its exit code and output. */
function bash(
  script: string,
  cwd: string,
  shell: 'bash' | 'zsh' | 'fish' = 'bash',
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      shell,
      ['-c', script],
      { cwd, env: { PATH: process.env.PATH, HOME: process.env.HOME } },
      (error, stdout, stderr) => {
        done({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
      },
    );
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
      'broken.yaml':
        'apiVersion: converge/v1\nkind: Deployment\nmetadata:\n  name: broken\nspec:\n  source: internal_docker\n  replicas: 2\n',
    });
    const script = await runConverge(['completion', 'bash']);
    expect(script.code, script.stderr).toBe(0);
    await writeFile(join(dir, 'converge.bash'), script.stdout);
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it(
    "offers the names of the line's manifest directory, after any flags; nothing without one",
    { timeout: 120_000 },
    async () => {
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
      const offer =
        'offer() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _converge; printf \'%s \' "${COMPREPLY[@]}"; echo; }';
      const calls = cases.map((words) => `offer ${words.map((w) => JSON.stringify(w)).join(' ')}`).join('\n');
      const run = await bash(
        `converge() { ${JSON.stringify(process.execPath)} ${JSON.stringify(MAIN)} "$@"; }\nsource converge.bash\n${offer}\n${calls}`,
        dir,
      );
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      const offered = run.stdout
        .split('\n')
        .slice(0, cases.length)
        .map((line) =>
          line
            .split(' ')
            .filter((w) => w !== '')
            .sort(),
        );
      expect(offered).toEqual([
        ['Deployment/web', 'OAuthProvider/web', 'broken', 'worker'],
        ['worker'],
        ['worker'],
        ['broken'],
        [],
        [],
        [],
      ]);
    },
  );

  // The lines of the bash case above, as each shell sees them: the words after "converge", and what it has typed of the name.
  const LINES: Array<{ words: string[]; typed: string; names: string[] }> = [
    {
      words: ['plan', 'manifests', '--target'],
      typed: '',
      names: ['Deployment/web', 'OAuthProvider/web', 'broken', 'worker'],
    },
    {
      words: ['plan', '--overlay', 'overlays', '-o', 'json', 'manifests', '--target', 'web', '--target'],
      typed: 'wo',
      names: ['worker'],
    },
    { words: ['plan', '--output=json', 'manifests', '--target'], typed: 'b', names: ['broken'] },
    { words: ['plan', '--target'], typed: '', names: [] },
    { words: ['plan', 'nowhere', '--target'], typed: '', names: [] },
  ];
  const converge = `${JSON.stringify(process.execPath)} ${JSON.stringify(MAIN)}`;

  it(
    'zsh offers the same names (its _converge_targets, with compadd recording what it is given)',
    { timeout: 120_000 },
    async () => {
      const script = await runConverge(['completion', 'zsh']);
      await writeFile(join(dir, 'converge.zsh'), script.stdout);
      // zsh filters by what is typed itself (compadd): the recorder keeps the names that match, as zsh would show them
      const calls = LINES.map(
        ({ words, typed }) =>
          `words=(${[...words, typed].map((w) => JSON.stringify(w)).join(' ')}); CURRENT=${words.length + 1}; offered=(); _converge_targets; print -r -- "\${(j: :)\${(@M)offered:#${typed}*}}"`,
      ).join('\n');
      const run = await bash(
        `converge() { ${converge} "$@"; }\ncompdef() { :; }\nsource converge.zsh\ncompadd() { [[ $1 == -a ]] && offered+=(\${(P)2}); }\n${calls}`,
        dir,
        'zsh',
      );
      expect(run.stderr).toBe('');
      const offered = run.stdout
        .split('\n')
        .slice(0, LINES.length)
        .map((line) =>
          line
            .split(' ')
            .filter((w) => w !== '')
            .sort(),
        );
      expect(offered).toEqual(LINES.map((l) => l.names));
    },
  );

  it('fish offers the same names (complete -C, as fish asks when Tab is pressed)', { timeout: 120_000 }, async () => {
    const script = await runConverge(['completion', 'fish']);
    await writeFile(join(dir, 'converge.fish'), script.stdout);
    const calls = LINES.map(
      ({ words, typed }) =>
        `echo (complete -C ${JSON.stringify(['converge', ...words, typed].join(' '))} | string replace -r '\\t.*' '')`,
    ).join('\n');
    const run = await bash(`function converge; ${converge} $argv; end\nsource converge.fish\n${calls}`, dir, 'fish');
    expect(run.stderr).toBe('');
    const offered = run.stdout
      .split('\n')
      .slice(0, LINES.length)
      .map((line) =>
        line
          .split(' ')
          .filter((w) => w !== '')
          .sort(),
      );
    expect(offered).toEqual(LINES.map((l) => l.names));
  });

  it('converge completion --targets prints the names one a line, and nothing (exit 0) for what it cannot read', async () => {
    const listed = await runConverge(['completion', '--targets', '--', join(dir, 'manifests')]);
    expect(listed).toMatchObject({
      code: 0,
      stdout: 'Deployment/web\nOAuthProvider/web\nbroken\nworker\n',
      stderr: '',
    });
    for (const args of [['--targets', '--', join(dir, 'nowhere')], ['--targets']]) {
      expect(await runConverge(['completion', ...args])).toMatchObject({ code: 0, stdout: '', stderr: '' });
    }
  });
});

// Completion after `converge history` (issue 51): the names the line's Redis prefix knows, in each shell, from the
// projection's states; a Redis that cannot be reached offers nothing, silently.
describe('completion of converge history names', () => {
  let dir: string;
  const prefix = testPrefix('completion-history');
  const converge = `${JSON.stringify(process.execPath)} ${JSON.stringify(MAIN)}`;
  beforeAll(async () => {
    dir = await tempDir('completion-history');
    const redis = rawRedis();
    try {
      // Only the keys are read: a provider and a deployment share "web", so each is offered as Kind/NAME.
      const state = {
        'Deployment/web': '{}',
        'OAuthProvider/web': '{}',
        'Deployment/worker': '{}',
        'Deployment/api': '{}',
      };
      await redis.hset(`${prefix}:record:state`, state);
    } finally {
      redis.disconnect();
    }
    for (const shell of ['bash', 'zsh', 'fish'] as const) {
      const script = await runConverge(['completion', shell]);
      expect(script.code, script.stderr).toBe(0);
      await writeFile(join(dir, `converge.${shell}`), script.stdout);
    }
  });
  afterAll(async () => {
    await dropPrefix(prefix);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const all = ['Deployment/web', 'OAuthProvider/web', 'api', 'worker'];
  const on = ['--redis-url', REDIS_URL, '--redis-prefix', prefix];
  /** The words after "history" on the line, what is typed of the name, and the names each shell offers. */
  const lines = async (): Promise<Array<{ words: string[]; typed: string; names: string[] }>> => [
    { words: ['history', ...on], typed: '', names: all },
    { words: ['history', ...on, '-o', 'json'], typed: 'w', names: ['worker'] },
    { words: ['history', '--redis-url', REDIS_URL, '--redis-prefix', `${prefix}-none`], typed: '', names: [] },
    // a Redis that refuses: nothing, and no message
    {
      words: ['history', '--redis-url', `redis://127.0.0.1:${await closedPort()}`, '--redis-prefix', prefix],
      typed: '',
      names: [],
    },
  ];
  const sorted = (stdout: string, n: number): string[][] =>
    stdout
      .split('\n')
      .slice(0, n)
      .map((line) =>
        line
          .split(' ')
          .filter((w) => w !== '')
          .sort(),
      );

  it('bash offers the names the prefix knows', { timeout: 120_000 }, async () => {
    const cases = await lines();
    const offer =
      'offer() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _converge; printf \'%s \' "${COMPREPLY[@]}"; echo; }';
    const calls = cases
      .map(({ words, typed }) => `offer converge ${[...words, typed].map((w) => JSON.stringify(w)).join(' ')}`)
      .join('\n');
    const run = await bash(`converge() { ${converge} "$@"; }\nsource converge.bash\n${offer}\n${calls}`, dir);
    expect(run.stderr).toBe('');
    expect(sorted(run.stdout, cases.length)).toEqual(cases.map((c) => c.names));
  });

  it(
    'zsh offers the same names (_converge_recorded, compadd recording what it is given)',
    { timeout: 120_000 },
    async () => {
      const cases = await lines();
      const calls = cases
        .map(
          ({ words, typed }) =>
            `words=(${[...words, typed].map((w) => JSON.stringify(w)).join(' ')}); CURRENT=${words.length + 1}; offered=(); _converge_recorded; print -r -- "\${(j: :)\${(@M)offered:#${typed}*}}"`,
        )
        .join('\n');
      const run = await bash(
        `converge() { ${converge} "$@"; }\ncompdef() { :; }\nsource converge.zsh\ncompadd() { [[ $1 == -a ]] && offered+=(\${(P)2}); }\n${calls}`,
        dir,
        'zsh',
      );
      expect(run.stderr).toBe('');
      expect(sorted(run.stdout, cases.length)).toEqual(cases.map((c) => c.names));
    },
  );

  it('fish offers the same names (complete -C)', { timeout: 120_000 }, async () => {
    const cases = await lines();
    const calls = cases
      .map(
        ({ words, typed }) =>
          `echo (complete -C ${JSON.stringify(['converge', ...words, typed].join(' '))} | string replace -r '\\t.*' '')`,
      )
      .join('\n');
    const run = await bash(`function converge; ${converge} $argv; end\nsource converge.fish\n${calls}`, dir, 'fish');
    expect(run.stderr).toBe('');
    expect(sorted(run.stdout, cases.length)).toEqual(cases.map((c) => c.names));
  });

  it('converge completion --recorded prints the names one a line, and nothing (exit 0) for a Redis it cannot read', async () => {
    expect(await runConverge(['completion', '--recorded', '--', ...on])).toMatchObject({
      code: 0,
      stdout: `${all.join('\n')}\n`,
      stderr: '',
    });
    const refused = ['--redis-url', `redis://127.0.0.1:${await closedPort()}`];
    expect(await runConverge(['completion', '--recorded', '--', ...refused])).toMatchObject({
      code: 0,
      stdout: '',
      stderr: '',
    });
  });
});
