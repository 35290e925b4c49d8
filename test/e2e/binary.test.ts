// The built converge binary as a user runs it: --help lists every command, a closed pipe ends quietly, the README's
// `npm link` puts it on the PATH.
import { spawn } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMAND_NAMES, loadCommands } from '../../src/cli/commands/index.js';

const MAIN = join(process.env.CONVERGE_TEST_DIST!, 'cli', 'main.js');
const ROOT = resolve(import.meta.dirname, '../..');

function runBinary(
  args: string[],
  options: { closeStdoutAfter?: number } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    if (options.closeStdoutAfter === 0) child.stdout.destroy();
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
      if (options.closeStdoutAfter !== undefined && stdout.length >= options.closeStdoutAfter) child.stdout.destroy();
    });
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('the converge binary', () => {
  // Twelve cold starts of the binary: near half a minute on a loaded 2-core machine, so a timeout of its own.
  it('--help lists every command, and every command has --help', async () => {
    const { code, stdout } = await runBinary(['--help']);
    expect(code).toBe(0);
    const listed = [...stdout.matchAll(/^ {2}(\S+) {2,}/gm)].map((m) => m[1]);
    expect(listed).toEqual(COMMAND_NAMES);
    // each name loads the command of that name
    expect((await loadCommands()).map((c) => c.name)).toEqual(COMMAND_NAMES);
    expect(listed).toEqual(
      expect.arrayContaining(['validate', 'plan', 'apply', 'run', 'status', 'emulator', 'repos', 'schema']),
    );
    for (const name of listed) {
      const help = await runBinary([name!, '--help']);
      expect(help.code, name).toBe(0);
      expect(help.stdout, name).toMatch(new RegExp(`^Usage: converge ${name}`));
    }
  }, 180_000);

  it('--version prints the version of package.json', async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const { code, stdout, stderr } = await runBinary([flag]);
      expect(code, `${flag}: ${stderr}`).toBe(0);
      expect(stdout, flag).toBe(`converge ${version}\n`);
    }
  });

  it('answers an unknown command and an unknown flag with one line and exit 1', async () => {
    const unknown = await runBinary(['deploy']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('converge: unknown command "deploy"; run "converge --help" for the list\n');
    const flag = await runBinary(['plan', 'examples/manifests', '--outptu', 'json']);
    expect(flag.code).toBe(1);
    expect(flag.stderr.trim().split('\n')).toHaveLength(1);
    expect(flag.stderr).toContain('--outptu');
    // A mistyped command gets a did-you-mean, as a mistyped flag does.
    const typo = await runBinary(['aply', 'examples/manifests']);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toBe(
      'converge: unknown command "aply"; did you mean "converge apply"?; run "converge --help" for the list\n',
    );
  });

  it('a flag without its value is one usage line in the words of the others, whether it is last or followed by a flag', async () => {
    const last = await runBinary(['plan', 'examples/manifests', '--api-url']);
    expect(last.code).toBe(1);
    expect(last.stderr).toBe(
      'converge plan: option --api-url needs a value (--api-url URL) (see "converge plan --help")\n',
    );
    const followed = await runBinary(['plan', 'examples/manifests', '--api-url', '--output', 'json']);
    expect(followed.code).toBe(1);
    expect(followed.stderr).toBe(
      'converge plan: option --api-url needs a value (--api-url URL), and the next argument is another option (a value that starts with a dash goes as --api-url=VALUE) (see "converge plan --help")\n',
    );
    expect(JSON.parse(followed.stdout)).toEqual({
      error: { code: 'E_USAGE', message: expect.stringContaining('option --api-url needs a value') },
    });
    const short = await runBinary(['apply', 'examples/manifests', '-o']);
    expect(short.stderr).toBe(
      'converge apply: option --output needs a value (--output FMT) (see "converge apply --help")\n',
    );
  });

  it('ends quietly when its stdout pipe closes early', async () => {
    const { stderr } = await runBinary(['validate', 'test/fixtures/bad'], { closeStdoutAfter: 0 });
    expect(stderr).not.toContain('EPIPE');
    expect(stderr).not.toMatch(/\n\s+at /);
  });

  it("the README's npm link line puts `converge` on the PATH (npm's global folder a temporary one here)", async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const line = /^npm run build && (npm link)\b/m.exec(readme);
    expect(line, 'README.md says how to put converge on the PATH with npm link').not.toBeNull();
    const work = mkdtempSync(join(tmpdir(), 'converge-link-'));
    try {
      // A clone as npm sees it: package.json, the built dist/, and its dependencies (the shared install, only read).
      const clone = join(work, 'clone');
      cpSync(join(ROOT, 'package.json'), join(clone, 'package.json'));
      cpSync(join(MAIN, '..', '..'), join(clone, 'dist'), { recursive: true });
      chmodSync(join(clone, 'dist', 'cli', 'main.js'), 0o755);
      symlinkSync(join(ROOT, 'node_modules'), join(clone, 'node_modules'));
      const env = {
        PATH: `${join(work, 'prefix', 'bin')}:${process.env.PATH}`,
        HOME: work,
        npm_config_prefix: join(work, 'prefix'),
      };
      const linked = await runShell(`${line![1]} --offline --no-audit --no-fund`, clone, env);
      expect(linked.code, linked.stderr).toBe(0);
      const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
      const used = await runShell('command -v converge && converge --version', work, env);
      expect(used.stdout).toBe(`${join(work, 'prefix', 'bin', 'converge')}\nconverge ${version}\n`);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }, 120_000);
});

function runShell(
  script: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn('bash', ['-c', script], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}
