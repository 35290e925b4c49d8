// `converge validate DIR|FILE...`: load and check manifests without the network; diagnostics one per line, exit 1 on errors.
import { formatDiagnostic, sortDiagnostics } from '../../core/diagnostics.js';
import { UsageError } from '../../core/errors.js';
import { secretDiagnostics } from '../../secrets/resolve.js';
import type { Command } from '../command.js';
import { environmentOf } from '../environment.js';
import { shownDiagnostic } from '../paths.js';
import { resolveSettings, settingOptions } from '../settings.js';
import { validateInput } from '../validate-input.js';
import { COMMAND_SUMMARIES } from './summaries.js';

const FORMATS = ['text', 'json'] as const;

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}

export const validateCommand: Command = {
  name: 'validate',
  summary: COMMAND_SUMMARIES.validate,
  usage: 'converge validate DIR|FILE... [--dir DIR] [--vars FILE]... [--overlay DIR]... [--allow-literal-secrets] [--check-secrets] [--output text|json]',
  details:
    'DIR: the whole manifest directory, as plan reads it. FILE...: only these manifest files (*.yaml, *.yml, as a pre-commit\n' +
    'hook passes them): each is checked, and a name declared twice among them is an error; the other files of their directory\n' +
    'are not read (--overlay needs DIR). With --dir DIR, the files are checked in that directory\'s context: the whole of DIR is\n' +
    'read (a name another of its files declares is an error, overlays apply), and only the given files\' findings are reported.\n' +
    'Text names each file as it opens from the working directory (DIR as typed, plus the path in it; a FILE as given);\n' +
    '--output json names them relative to DIR.\n',
  positionals: [1, Number.POSITIVE_INFINITY],
  options: {
    output: { type: 'string', short: 'o', placeholder: 'FMT', choices: FORMATS, description: 'text (default) or json' },
    dir: { type: 'string', placeholder: 'DIR', description: 'with FILE...: the manifest directory they belong to, read whole for the rules that span it' },
    'check-secrets': {
      type: 'boolean',
      description: 'also resolve every secret reference (environment variables, files); an unresolvable one is an error',
    },
    ...settingOptions('allowLiteralSecrets', 'vars', 'overlays'),
  },
  async run(args, io) {
    const output = (args.values.output as string | undefined) ?? 'text';
    if (!FORMATS.includes(output as (typeof FORMATS)[number])) {
      throw new UsageError(`--output "${output}" is not one of ${FORMATS.join(', ')}`);
    }
    const settings = resolveSettings(args, io.env);
    const input = validateInput(args.positionals, io.cwd, settings.overlays, args.values.dir as string | undefined);
    // Files given: the variables files are named from the working directory too, as the files are.
    const environment = environmentOf(settings, io.cwd, input.dir ?? io.cwd);
    // validate sees no live state: it also warns of what a create needs that a manifest leaves out (a plan blocks that create).
    const loaded = await input.load({ allowLiteralSecrets: settings.allowLiteralSecrets, createWarnings: true, ...(environment ? { environment } : {}) });
    const secretProblems = args.values['check-secrets'] === true ? secretDiagnostics(loaded.resources, io.env, { baseDir: io.cwd }) : [];
    const diagnostics = sortDiagnostics([...loaded.diagnostics, ...secretProblems]);
    const errors = diagnostics.filter((d) => d.severity === 'error').length;
    const warnings = diagnostics.length - errors;
    if (output === 'json') {
      const report = {
        valid: errors === 0,
        summary: { resources: loaded.resources.length, blocked: loaded.blocked.length, files: loaded.files.length, errors, warnings },
        files: loaded.files,
        // Names and places only: a literal secret value (with --allow-literal-secrets) must never be printed.
        resources: loaded.resources.map((r) => ({ kind: r.kind, name: r.name, ...r.location, suspend: r.suspend })),
        blocked: loaded.blocked.map((b) => ({ kind: b.kind, name: b.name, ...b.location, reason: b.reason })),
        diagnostics,
      };
      io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      return errors === 0 ? 0 : 1;
    }
    for (const diagnostic of diagnostics) io.stdout.write(`${formatDiagnostic(shownDiagnostic(diagnostic, input.shown))}\n`);
    const summary = `${plural(loaded.resources.length, 'resource')} in ${plural(loaded.files.length, 'file')}, ${plural(errors, 'error')}`;
    io.stdout.write(`${summary}${warnings > 0 ? `, ${plural(warnings, 'warning')}` : ''}\n`);
    return errors === 0 ? 0 : 1;
  },
};
