// The shape of one CLI command module, and the option parser they all share.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from '../core/errors.js';

export type OptionSpec = NonNullable<ParseArgsConfig['options']>[string] & {
  /** One line for --help. */
  description: string;
  /** Shown in --help as the value's placeholder, e.g. FMT, N, URL. */
  placeholder?: string;
};

export interface CommandIo {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export interface Command {
  name: string;
  /** One line for the command list. */
  summary: string;
  /** e.g. "converge plan DIR [options]". */
  usage: string;
  /** Paragraphs printed by --help after the summary (optional). */
  details?: string;
  /** Number of positional arguments: [min, max]. */
  positionals: [number, number];
  options: Record<string, OptionSpec>;
  /** Returns the process exit code. Throws ConvergeError for user mistakes (printed as one line, exit 1). */
  run(args: ParsedArgs, io: CommandIo): Promise<number>;
}

export interface ParsedArgs {
  positionals: string[];
  values: Record<string, string | boolean | string[] | undefined>;
}

/** Parses argv for one command; unknown flags and wrong positional counts are UsageErrors. */
export function parseCommandArgs(command: Command, argv: string[]): ParsedArgs {
  const options: ParseArgsConfig['options'] = {};
  for (const [name, spec] of Object.entries(command.options)) {
    const { description: _d, placeholder: _p, ...rest } = spec;
    options[name] = rest;
  }
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(`${(error as Error).message.split('\n')[0]}; see "converge ${command.name} --help"`);
  }
  const [min, max] = command.positionals;
  if (parsed.positionals.length < min || parsed.positionals.length > max) {
    throw new UsageError(`wrong number of arguments; usage: ${command.usage}`);
  }
  return { positionals: parsed.positionals, values: parsed.values as ParsedArgs['values'] };
}

/** The --help text of one command. */
export function commandHelp(command: Command): string {
  const lines = [`Usage: ${command.usage}`, '', command.summary, '', ...(command.details ? [command.details.trimEnd(), ''] : []), 'Options:'];
  const rows = Object.entries(command.options).map(([name, spec]) => {
    const flag = `  ${spec.short ? `-${spec.short}, ` : ''}--${name}${spec.type === 'string' ? ` ${spec.placeholder ?? 'VALUE'}` : ''}`;
    return [flag, spec.description] as const;
  });
  rows.push(['  -h, --help', 'show this help']);
  const width = Math.max(...rows.map(([flag]) => flag.length)) + 2;
  for (const [flag, description] of rows) lines.push(flag.padEnd(width) + description);
  return lines.join('\n') + '\n';
}
