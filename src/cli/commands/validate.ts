// `converge validate DIR|FILE...`: load and check manifests without the network; diagnostics one per line, exit 1 on errors.
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { VALIDATE_FORMATS } from './values.js';
import type { Command, ParsedArgs } from '../command.js';
import { settingOptions } from '../settings.js';
import { COMMAND_SUMMARIES } from './summaries.js';

/** The directory validate reads whole (one DIR, or --dir DIR), which may hold thousands of files; else undefined. */
function directoryRead(args: ParsedArgs, cwd: string): string | undefined {
  if (typeof args.values.dir === 'string') return resolve(cwd, args.values.dir);
  if (args.positionals.length !== 1) return undefined;
  const dir = resolve(cwd, args.positionals[0]!);
  return statSync(dir, { throwIfNoEntry: false })?.isDirectory() ? dir : undefined;
}

export const validateCommand: Command = {
  name: 'validate',
  summary: COMMAND_SUMMARIES.validate,
  usage:
    'converge validate DIR|FILE... [--dir DIR] [--vars FILE]... [--overlay DIR]... [--allow-literal-secrets] [--check-secrets] [--output text|json]',
  details:
    'DIR: the whole manifest directory, as plan reads it. FILE...: only these manifest files (*.yaml, *.yml, as a pre-commit\n' +
    'hook passes them): each is checked, and a name declared twice among them is an error; the other files of their directory\n' +
    "are not read (--overlay needs DIR). With --dir DIR, the files are checked in that directory's context: the whole of DIR is\n" +
    "read (a name another of its files declares is an error, overlays apply), and only the given files' findings are reported.\n" +
    'Text names each file as it opens from the working directory (DIR as typed, plus the path in it; a FILE as given);\n' +
    '--output json names them relative to DIR.\n',
  positionals: [1, Number.POSITIVE_INFINITY],
  options: {
    output: {
      type: 'string',
      short: 'o',
      placeholder: 'FMT',
      choices: VALIDATE_FORMATS,
      description: 'text (default) or json',
    },
    dir: {
      type: 'string',
      placeholder: 'DIR',
      description: 'with FILE...: the manifest directory they belong to, read whole for the rules that span it',
    },
    'check-secrets': {
      type: 'boolean',
      description:
        'also resolve every secret reference (environment variables, files); an unresolvable one is an error',
    },
    ...settingOptions('allowLiteralSecrets', 'vars', 'overlays'),
  },
  run: async (args, io) => {
    // A directory is listed while this thread loads the command, and the compile threads start as soon as the walk
    // has found enough files, so they load the parser while this thread does (docs/performance.md, "Loading manifests").
    const dir = directoryRead(args, io.cwd);
    const ahead = dir ? new (await import('../../observe/listing-ahead.js')).ListingAhead(dir) : undefined;
    try {
      return await (await import('./validate-run.js')).runValidateCommand(args, io, ahead);
    } finally {
      // On every way out, a failed import included: threads left running would keep the process alive.
      await ahead?.close();
    }
  },
};
