// Runs the converge CLI in-process with captured stdout/stderr, for command tests.
import { PassThrough } from 'node:stream';
import type { CommandIo } from '../../src/cli/command.js';
import { runCli } from '../../src/cli/main.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `converge ...argv` with the given environment; `tty` marks stdout/stderr as terminals; `stdin` is what a person
 * types (none: no terminal, as in CI).
 */
export async function runCapture(
  argv: string[],
  env: NodeJS.ProcessEnv = {},
  options: { tty?: boolean; cwd?: string; stdin?: CommandIo['stdin'] } = {},
): Promise<CliResult> {
  const stdout = Object.assign(new PassThrough(), { isTTY: options.tty === true });
  const stderr = Object.assign(new PassThrough(), { isTTY: options.tty === true });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on('data', (c: Buffer) => out.push(c));
  stderr.on('data', (c: Buffer) => err.push(c));
  const code = await runCli(argv, {
    ...(options.stdin ? { stdin: options.stdin } : {}),
    stdout,
    stderr,
    env,
    cwd: options.cwd ?? process.cwd(),
  });
  return { code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') };
}
