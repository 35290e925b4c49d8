// `converge completion bash|zsh|fish`: every command and flag of the command table is in each script; the bash script
// is valid bash and completes commands, flags and paths in a real bash child process.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FISH_DESCRIPTION_MAX } from '../../src/cli/completion-script.js';
import { loadCommands } from '../../src/cli/commands/index.js';
import { runCapture } from '../helpers/cli.js';

/** Runs bash with `args` in `cwd` (a bare environment); its exit code and output, also when it fails. */
function bash(args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      'bash',
      args,
      { cwd, env: { PATH: process.env.PATH, HOME: process.env.HOME } },
      (error, stdout, stderr) => {
        done({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
      },
    );
  });
}

describe('converge completion', () => {
  let dir: string;
  let script: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'converge-completion-'));
    await mkdir(join(dir, 'manifests'));
    await mkdir(join(dir, 'overlays'));
    await writeFile(join(dir, 'dev.yaml'), 'A: 1\n');
    const run = await runCapture(['completion', 'bash']);
    expect(run.code, run.stderr).toBe(0);
    script = join(dir, 'converge.bash');
    await writeFile(script, run.stdout);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.each(['zsh', 'fish'])(
    'the %s script offers the words of each enum flag (--output, --drift, --prune-mode)',
    async (shell) => {
      const run = await runCapture(['completion', shell]);
      expect(run.code, run.stderr).toBe(0);
      if (shell === 'zsh') {
        expect(run.stdout).toContain(":output:(text markdown json)'");
        expect(run.stdout).toContain(":drift:(heal report)'");
        expect(run.stdout).toContain(":prune-mode:(auto confirm)'");
      } else {
        expect(run.stdout).toMatch(/-n '__fish_seen_subcommand_from plan' -l output -s o -x -a 'text markdown json'/);
        expect(run.stdout).toMatch(/-n '__fish_seen_subcommand_from run' -l drift -x -a 'heal report'/);
        expect(run.stdout).toMatch(/-n '__fish_seen_subcommand_from run' -l prune-mode -x -a 'auto confirm'/);
      }
    },
  );

  it("fish descriptions are short: fish repeats a flag's for each value it offers (every --target name)", async () => {
    const run = await runCapture(['completion', 'fish']);
    const descriptions = [...run.stdout.matchAll(/ -d '((?:[^'\\]|\\.)*)'/g)].map((m) => m[1]!);
    expect(descriptions.length).toBeGreaterThan(100);
    for (const text of descriptions) expect(text.length, text).toBeLessThanOrEqual(FISH_DESCRIPTION_MAX);
    expect(run.stdout).toContain("-l target -x -a '(__converge_targets)' -d 'plan (and apply) only this resource'");
  });

  it.each(['bash', 'zsh', 'fish'])(
    'the %s script names every command and every flag of the command table',
    async (shell) => {
      const run = await runCapture(['completion', shell]);
      expect(run.code, run.stderr).toBe(0);
      const commands = await loadCommands();
      expect(commands.map((c) => c.name)).toContain('completion');
      for (const command of commands) {
        expect(run.stdout, command.name).toMatch(new RegExp(`(^|[\\s'"(])${command.name}[\\s:)'"]`));
        for (const [flag, spec] of Object.entries(command.options)) {
          // bash and zsh spell flags --flag; fish declares them as -l flag.
          expect(run.stdout, `${command.name} --${flag}`).toContain(
            shell === 'fish' ? `-n '__fish_seen_subcommand_from ${command.name}' -l ${flag}` : `--${flag}`,
          );
          if (spec.short)
            expect(run.stdout, `${command.name} -${spec.short}`).toContain(
              shell === 'fish' ? `-s ${spec.short}` : `-${spec.short}`,
            );
        }
      }
    },
  );

  it('an unknown shell is one line naming the shells, exit 1', async () => {
    const run = await runCapture(['completion', 'tcsh']);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('converge completion: no completion for the shell "tcsh"; give one of bash, zsh, fish\n');
  });

  it(
    'the bash script is valid bash (bash -n) and registers _converge for converge (complete -p)',
    { timeout: 120_000 },
    async () => {
      const syntax = await bash(['-n', script], dir);
      expect(syntax.code, syntax.stderr).toBe(0);
      const registered = await bash(['-c', `source ${JSON.stringify(script)} && complete -p converge`], dir);
      expect(registered.code, registered.stderr).toBe(0);
      expect(registered.stdout.trim()).toBe('complete -o bashdefault -o filenames -F _converge converge');
    },
  );

  /** What _converge offers for each line of words typed (the last word being completed), in one real bash. */
  async function complete(cases: string[][]): Promise<string[][]> {
    const calls = cases.map((words) => `offer ${words.map((w) => JSON.stringify(w)).join(' ')}`).join('\n');
    const offer =
      'offer() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _converge; printf \'%s \' "${COMPREPLY[@]}"; echo; }';
    const run = await bash(['-c', `source ${JSON.stringify(script)}\n${offer}\n${calls}`], dir);
    expect(run.code, run.stderr).toBe(0);
    return run.stdout
      .split('\n')
      .slice(0, cases.length)
      .map((line) =>
        line
          .split(' ')
          .filter((w) => w !== '')
          .sort(),
      );
  }

  it(
    'completes commands, flags, directory and file values, fixed words and enum values, in a real bash',
    { timeout: 120_000 },
    async () => {
      const offered = await complete([
        ['converge', 'pl'],
        ['converge', 'comp'],
        ['converge', 'plan', '--ta'],
        ['converge', 'apply', '--wa'],
        // DIR arguments and --overlay DIR: directories only; --vars FILE: files too.
        ['converge', 'plan', ''],
        ['converge', 'plan', 'manifests', '--overlay', ''],
        ['converge', 'plan', 'manifests', '--vars', ''],
        // A flag whose value is neither a path nor a word of an enum offers nothing; the shell argument of completion offers the shells.
        ['converge', 'plan', 'manifests', '--api-url', ''],
        ['converge', 'completion', ''],
        // Enum values: every spelling of the flag, settings' enums (drift policy, prune mode, adopt, log level) too.
        ['converge', 'plan', 'manifests', '--output', ''],
        ['converge', 'plan', 'manifests', '-o', 'j'],
        ['converge', 'validate', 'manifests', '--output', ''],
        ['converge', 'run', 'manifests', '--drift', ''],
        ['converge', 'run', 'manifests', '--prune-mode', ''],
        ['converge', 'apply', 'manifests', '--adopt', 'ex'],
        ['converge', 'run', 'manifests', '--log-level', 'i'],
      ]);
      expect(offered).toEqual([
        ['plan'],
        ['completion'],
        ['--target'],
        ['--wait', '--wait-timeout', '--wave-max-in-flight'],
        ['manifests', 'overlays'],
        ['manifests', 'overlays'],
        ['converge.bash', 'dev.yaml', 'manifests', 'overlays'],
        [],
        ['bash', 'fish', 'zsh'],
        ['json', 'markdown', 'text'],
        ['json'],
        ['json', 'text'],
        ['heal', 'report'],
        ['auto', 'confirm'],
        ['explicit'],
        ['info'],
      ]);
    },
  );
});
