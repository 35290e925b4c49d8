#!/usr/bin/env node
// The converge binary: finds the command, parses its flags, runs it, turns user mistakes into one line.
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ConvergeError } from '../core/errors.js';
import { VERSION } from '../service/version.js';
import { commandHelp, parseCommandArgs, type Command, type CommandIo } from './command.js';
import { loadCommand, loadCommands } from './commands/index.js';

async function mainHelp(): Promise<string> {
  const commands = await loadCommands();
  const width = Math.max(...commands.map((c) => c.name.length)) + 4;
  const lines = [
    'converge: GitOps reconciler for the Deployment and OAuth Provider Service',
    '',
    'Usage: converge COMMAND [options]',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}${c.summary}`),
    '',
    'Run "converge COMMAND --help" for the options of one command.',
  ];
  return lines.join('\n') + '\n';
}

/** Runs one invocation; returns the exit code. Exported for in-process tests. */
export async function runCli(argv: string[], io: CommandIo): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(await mainHelp());
    return name ? 0 : 1;
  }
  if (name === '--version' || name === '-V') {
    io.stdout.write(`converge ${VERSION}\n`);
    return 0;
  }
  const command: Command | undefined = await loadCommand(name);
  if (!command) {
    io.stderr.write(`converge: unknown command "${name}"; run "converge --help" for the list\n`);
    return 1;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout.write(commandHelp(command));
    return 0;
  }
  try {
    return await command.run(parseCommandArgs(command, rest), io);
  } catch (error) {
    if (error instanceof ConvergeError) {
      io.stderr.write(`converge ${command.name}: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
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
  runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() }).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`converge: internal error: ${(error as Error)?.stack ?? String(error)}\n`);
      process.exitCode = 70;
    },
  );
}
