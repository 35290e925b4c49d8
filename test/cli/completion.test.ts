// `converge completion bash|zsh|fish`: every command and flag of the command table is in each script; the bash script
// is valid bash and completes commands, flags and paths in a real bash child process.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCommands } from '../../src/cli/commands/index.js';
import { runCapture } from '../helpers/cli.js';

function bash(args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn('bash', args, { cwd, env: { PATH: process.env.PATH, HOME: process.env.HOME }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => done({ code, stdout, stderr }));
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

  it.each(['bash', 'zsh', 'fish'])('the %s script names every command and every flag of the command table', async (shell) => {
    const run = await runCapture(['completion', shell]);
    expect(run.code, run.stderr).toBe(0);
    const commands = await loadCommands();
    expect(commands.map((c) => c.name)).toContain('completion');
    for (const command of commands) {
      expect(run.stdout, command.name).toMatch(new RegExp(`(^|[\\s'"(])${command.name}[\\s:)'"]`));
      for (const [flag, spec] of Object.entries(command.options)) {
        // bash and zsh spell flags --flag; fish declares them as -l flag.
        expect(run.stdout, `${command.name} --${flag}`).toContain(shell === 'fish' ? `-n '__fish_seen_subcommand_from ${command.name}' -l ${flag}` : `--${flag}`);
        if (spec.short) expect(run.stdout, `${command.name} -${spec.short}`).toContain(shell === 'fish' ? `-s ${spec.short}` : `-${spec.short}`);
      }
    }
  });

  it('an unknown shell is one line naming the shells, exit 1', async () => {
    const run = await runCapture(['completion', 'tcsh']);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('converge completion: no completion for the shell "tcsh"; give one of bash, zsh, fish\n');
  });

  it('the bash script is valid bash (bash -n) and registers _converge for converge (complete -p)', async () => {
    const syntax = await bash(['-n', script], dir);
    expect(syntax.code, syntax.stderr).toBe(0);
    const registered = await bash(['-c', `source ${JSON.stringify(script)} && complete -p converge`], dir);
    expect(registered.code, registered.stderr).toBe(0);
    expect(registered.stdout.trim()).toBe('complete -o bashdefault -o filenames -F _converge converge');
  });

  /** What _converge offers for the words typed (the last one being completed), in a real bash. */
  async function complete(...words: string[]): Promise<string[]> {
    const array = words.map((w) => JSON.stringify(w)).join(' ');
    const run = await bash(['-c', `source ${JSON.stringify(script)}; COMP_WORDS=(${array}); COMP_CWORD=${words.length - 1}; _converge; printf '%s\\n' "\${COMPREPLY[@]}"`], dir);
    expect(run.code, run.stderr).toBe(0);
    return run.stdout.split('\n').filter((l) => l !== '').sort();
  }

  it('completes commands, flags, directory and file values, and fixed words, in a real bash', async () => {
    expect(await complete('converge', 'pl')).toEqual(['plan']);
    expect(await complete('converge', 'co')).toEqual(['completion']);
    expect(await complete('converge', 'plan', '--ta')).toEqual(['--target']);
    expect(await complete('converge', 'apply', '--wa')).toEqual(['--wait', '--wait-timeout']);
    // DIR arguments and --overlay DIR: directories only; --vars FILE: files too.
    expect(await complete('converge', 'plan', '')).toEqual(['manifests', 'overlays']);
    expect(await complete('converge', 'plan', 'manifests', '--overlay', '')).toEqual(['manifests', 'overlays']);
    expect(await complete('converge', 'plan', 'manifests', '--vars', '')).toEqual(['converge.bash', 'dev.yaml', 'manifests', 'overlays']);
    // A flag whose value is not a path offers nothing; the shell argument of completion offers the shells.
    expect(await complete('converge', 'plan', 'manifests', '--target', '')).toEqual([]);
    expect(await complete('converge', 'completion', '')).toEqual(['bash', 'fish', 'zsh']);
  });
});
