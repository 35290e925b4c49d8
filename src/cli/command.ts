// The shape of one CLI command module, and the option parser they all share.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from '../core/errors.js';
import { editDistance } from '../core/did-you-mean.js';

export type OptionSpec = NonNullable<ParseArgsConfig['options']>[string] & {
  /** One line for --help. */
  description: string;
  /** Shown in --help as the value's placeholder, e.g. FMT, N, URL. */
  placeholder?: string;
  /** The words the value may be (an enum): what shell completion offers for it. */
  choices?: readonly string[];
  /** The value names a declared resource (--target): completion offers those of the line's manifest directory. */
  resourceNames?: true;
};

export interface CommandIo {
  /** What a person types; absent, or not a TTY, when nobody is there to answer (CI, a pipe): nothing asks then. */
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean };
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

/** The name in `names` nearest to `word`, when it is near enough to be a typo of it. */
export function nearestName(word: string, names: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of names) {
    const distance = editDistance(word, name);
    if (!best || distance < best.distance) best = { name, distance };
  }
  if (!best) return undefined;
  const near =
    best.distance <= Math.max(2, Math.floor(word.length / 3)) ||
    best.name.startsWith(word) ||
    word.startsWith(best.name);
  return near ? best.name : undefined;
}

/** The command's flag nearest to `flag` (without dashes), when it is near enough to be a typo. */
export function nearestFlag(command: Command, flag: string): string | undefined {
  return nearestName(flag, [...Object.keys(command.options), 'help']);
}

/** One line for a flag the command does not have: "unknown option --outptu; did you mean --output?". */
function unknownOptionMessage(command: Command, message: string): string | undefined {
  const match = /^Unknown option '(-{1,2})([^'=]+)/.exec(message);
  if (!match) return undefined;
  const [, dashes, name] = match;
  const suggestion = dashes === '--' || name!.length > 1 ? nearestFlag(command, name!) : undefined;
  const hint = suggestion ? `; did you mean --${suggestion}?` : '';
  return `unknown option ${dashes}${name}${hint} (see "converge ${command.name} --help")`;
}

/**
 * One line for a flag given without its value, in the words of the other usage errors: "option --api-url needs a
 * value (--api-url URL) (see "converge plan --help")". The flag is last, or followed by another option.
 */
function missingValueMessage(command: Command, message: string): string | undefined {
  const match = /^Option '(?:-\w, )?--([^' ]+)(?: <value>)?' argument (missing|is ambiguous)/.exec(message);
  if (!match) return undefined;
  const [, name, why] = match;
  const placeholder = command.options[name!]?.placeholder ?? 'VALUE';
  const next =
    why === 'missing'
      ? ''
      : ', and the next argument is another option (a value that starts with a dash goes as --' + `${name}=VALUE)`;
  return `option --${name} needs a value (--${name} ${placeholder})${next} (see "converge ${command.name} --help")`;
}

/** The command's options as node's parseArgs takes them (without what only --help and completion read). */
function parseArgsOptions(command: Command): NonNullable<ParseArgsConfig['options']> {
  const options: NonNullable<ParseArgsConfig['options']> = {};
  for (const [name, spec] of Object.entries(command.options)) {
    const { description: _d, placeholder: _p, choices: _c, resourceNames: _r, ...rest } = spec;
    options[name] = rest;
  }
  return options;
}

/** Parses argv for one command; unknown flags and wrong positional counts are UsageErrors. */
export function parseCommandArgs(command: Command, argv: string[]): ParsedArgs {
  const options = parseArgsOptions(command);
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (error) {
    const first = (error as Error).message.split('\n')[0]!;
    throw new UsageError(
      unknownOptionMessage(command, first) ??
        missingValueMessage(command, first) ??
        `${first}; see "converge ${command.name} --help"`,
    );
  }
  const [min, max] = command.positionals;
  if (parsed.positionals.length < min || parsed.positionals.length > max) {
    throw new UsageError(`wrong number of arguments; usage: ${command.usage}`);
  }
  return { positionals: parsed.positionals, values: parsed.values as ParsedArgs['values'] };
}

/** The --help text of one command. */
export function commandHelp(command: Command): string {
  const lines = [
    `Usage: ${command.usage}`,
    '',
    command.summary,
    '',
    ...(command.details ? [command.details.trimEnd(), ''] : []),
    'Options:',
  ];
  const rows = Object.entries(command.options).map(([name, spec]) => {
    const flag = `  ${spec.short ? `-${spec.short}, ` : ''}--${name}${spec.type === 'string' ? ` ${spec.placeholder ?? 'VALUE'}` : ''}`;
    return [flag, spec.description] as const;
  });
  rows.push(['  -h, --help', 'show this help']);
  const width = Math.max(...rows.map(([flag]) => flag.length)) + 2;
  for (const [flag, description] of rows) lines.push(flag.padEnd(width) + description);
  return lines.join('\n') + '\n';
}
