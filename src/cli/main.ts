#!/usr/bin/env node
// The converge binary: finds the command, parses its flags, runs it, turns user mistakes into one line.
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ConvergeError, ServiceError } from '../core/errors.js';
import { NetworkError } from '../service/errors.js';
import { VERSION } from '../service/version.js';
import { commandHelp, nearestName, parseCommandArgs, type Command, type CommandIo } from './command.js';
import { COMMAND_NAMES, loadCommand } from './commands/index.js';
import { COMMAND_SUMMARIES } from './commands/summaries.js';

/** The overall --help: the command list from the summaries table, so it loads no command's module. */
function mainHelp(): string {
  const width = Math.max(...COMMAND_NAMES.map((name) => name.length)) + 4;
  const lines = [
    'converge: GitOps reconciler for the Deployment and OAuth Provider Service',
    '',
    'Usage: converge [--chdir DIR] COMMAND [options]',
    '',
    'Commands:',
    ...COMMAND_NAMES.map((name) => `  ${name.padEnd(width)}${COMMAND_SUMMARIES[name]}`),
    '',
    'Global option (before COMMAND): -C DIR, --chdir DIR  run as if started in DIR (relative paths are read from there)',
    '',
    'Run "converge COMMAND --help" for the options of one command.',
  ];
  return lines.join('\n') + '\n';
}

/** What a failed command reports: a stable code and one line. */
interface Failure {
  code: string;
  message: string;
}

/** True when argv asks for JSON output (`-o json`, `--output json`, `--output=json`, `-ojson`). */
function wantsJson(argv: readonly string[]): boolean {
  return argv.some(
    (arg, i) =>
      arg === '--output=json' || arg === '-ojson' || ((arg === '-o' || arg === '--output') && argv[i + 1] === 'json'),
  );
}

/** What to fix, after the service's own words: the setting that names the service, or the key. */
function hintOf(error: ConvergeError): string {
  if (error instanceof ServiceError && (error.status === 401 || error.status === 403)) {
    return '; check the API key in CONVERGE_API_KEY (--api-key), and for a key that spans several workspaces the workspace in CONVERGE_TENANT_ID (--tenant-id)';
  }
  if (error instanceof NetworkError)
    return '; is the service up there? the URL comes from --api-url or CONVERGE_API_URL';
  return '';
}

/** A server that cannot listen (port in use, not allowed, out of range): one line naming the address and the fix. */
function listenFailure(error: unknown): Failure | undefined {
  const e = error as NodeJS.ErrnoException & { address?: string; port?: number };
  if (e?.code === 'ERR_SOCKET_BAD_PORT')
    return { code: 'E_LISTEN', message: `${e.message.split('\n')[0]}; give a port from 1 to 65535` };
  if (e?.syscall !== 'listen') return undefined;
  const where = `${e.address ?? 'the address'}:${e.port ?? '?'}`;
  const why: Record<string, string> = {
    EADDRINUSE: 'the port is in use',
    EACCES: 'not allowed (a port below 1024 needs privileges)',
    EADDRNOTAVAIL: 'no such address on this machine',
  };
  return {
    code: 'E_LISTEN',
    message: `cannot listen on ${where}: ${why[e.code ?? ''] ?? e.code}; choose another with --http-port or --http-host`,
  };
}

/** The one line of an expected failure; undefined for a bug (printed with its stack). */
function failureOf(error: unknown): Failure | undefined {
  if (error instanceof ConvergeError) return { code: error.code, message: `${error.message}${hintOf(error)}` };
  return listenFailure(error);
}

/** Runs one invocation; returns the exit code. Exported for in-process tests. */
export async function runCli(argv: string[], io: CommandIo): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(mainHelp());
    return name ? 0 : 1;
  }
  if (name === '--version' || name === '-V') {
    io.stdout.write(`converge ${VERSION}\n`);
    return 0;
  }
  const command: Command | undefined = await loadCommand(name);
  if (!command) {
    const guess = nearestName(name, COMMAND_NAMES);
    io.stderr.write(
      `converge: unknown command "${name}"${guess ? `; did you mean "converge ${guess}"?` : ''}; run "converge --help" for the list\n`,
    );
    return 1;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout.write(commandHelp(command));
    return 0;
  }
  try {
    return await command.run(parseCommandArgs(command, rest), io);
  } catch (error) {
    const failure = failureOf(error);
    if (!failure) throw error;
    io.stderr.write(`converge ${command.name}: ${failure.message}\n`);
    // A job that asked for JSON reads a JSON document on stdout, error or not.
    if (wantsJson(rest)) io.stdout.write(`${JSON.stringify({ error: failure }, null, 2)}\n`);
    return 1;
  }
}

/**
 * The global option `-C DIR` / `--chdir DIR` before the command (as `git -C`, `make -C`): the whole process runs in DIR,
 * so every relative path (DIR arguments, --vars, a saved plan's manifest directory, secret files) is read from there.
 * Returns the arguments after it; a DIR that is not a directory is one line and exit 1.
 */
function leadingChdir(argv: string[]): string[] {
  const [first, second] = argv;
  let dir: string | undefined;
  let rest: string[];
  if (first === '-C' || first === '--chdir') [dir, rest] = [second, argv.slice(2)];
  else if (first?.startsWith('--chdir=')) [dir, rest] = [first.slice('--chdir='.length), argv.slice(1)];
  else return argv;
  try {
    if (!dir) throw new Error('missing');
    process.chdir(dir);
  } catch {
    process.stderr.write(
      `converge: ${first?.split('=')[0]} ${dir ?? ''}: ${dir ? 'not a directory that can be entered' : 'give a directory'}; usage: converge --chdir DIR COMMAND [options]\n`,
    );
    process.exit(1);
  }
  return rest;
}

/**
 * True when node was started on this module, however the path reached it: through a symlink such as
 * /usr/local/bin/converge, node_modules/.bin/converge, or a node_modules that is itself a symlink.
 */
function isEntryPoint(entry: string | undefined): boolean {
  if (!entry) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryPoint(process.argv[1]) || process.argv[1]?.endsWith('/converge')) {
  // A closed pipe (`converge plan ... | head`) ends the process quietly, as other command-line tools do.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
      throw error;
    });
  }
  const argv = leadingChdir(process.argv.slice(2));
  const io: CommandIo = {
    // A getter: process.stdin is opened only by a command that reads it (apply asking on a terminal, src/cli/approve.ts).
    get stdin() {
      return process.stdin;
    },
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
  };
  runCli(argv, io).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`converge: internal error: ${(error as Error)?.stack ?? String(error)}\n`);
      process.exitCode = 70;
    },
  );
}
