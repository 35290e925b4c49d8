// What `converge validate DIR|FILE...` runs (its flags and --help are in validate.ts, loaded without this).
import { VALIDATE_FORMATS } from './values.js';
import { formatDiagnostic, sortDiagnostics } from '../../core/diagnostics.js';
import { UsageError } from '../../core/errors.js';
import { secretDiagnostics } from '../../secrets/resolve.js';
import { environmentOf } from '../environment.js';
import { shownDiagnostic } from '../paths.js';
import { resolveSettings } from '../settings.js';
import { validateInput } from '../validate-input.js';
import type { CommandIo, ParsedArgs } from '../command.js';
import type { ListingAhead } from '../../observe/listing-ahead.js';

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}

/**
 * Runs `converge validate DIR|FILE...`; returns the exit code. `ahead`: the directory's listing validate.ts began
 * before this module loaded, which the load takes (validate.ts closes the compile threads it started).
 */
export async function runValidateCommand(args: ParsedArgs, io: CommandIo, ahead?: ListingAhead): Promise<number> {
  const output = (args.values.output as string | undefined) ?? 'text';
  if (!VALIDATE_FORMATS.includes(output as (typeof VALIDATE_FORMATS)[number])) {
    throw new UsageError(`--output "${output}" is not one of ${VALIDATE_FORMATS.join(', ')}`);
  }
  const settings = await resolveSettings(args, io.env);
  const input = validateInput(args.positionals, io.cwd, settings.overlays, args.values.dir as string | undefined);
  // Files given: the variables files are named from the working directory too, as the files are.
  const environment = environmentOf(settings, io.cwd, input.dir ?? io.cwd);
  // validate sees no live state: it also warns of what a create needs that a manifest leaves out (a plan blocks that create).
  const loaded = await input.load({
    allowLiteralSecrets: settings.allowLiteralSecrets,
    createWarnings: true,
    ...(environment ? { environment } : {}),
    ...(ahead ? { ahead } : {}),
  });
  const secretProblems =
    args.values['check-secrets'] === true ? secretDiagnostics(loaded.resources, io.env, { baseDir: io.cwd }) : [];
  const diagnostics = sortDiagnostics([...loaded.diagnostics, ...secretProblems]);
  const errors = diagnostics.filter((d) => d.severity === 'error').length;
  const warnings = diagnostics.length - errors;
  if (output === 'json') {
    const report = {
      valid: errors === 0,
      summary: {
        resources: loaded.resources.length,
        blocked: loaded.blocked.length,
        files: loaded.files.length,
        errors,
        warnings,
      },
      files: loaded.files,
      // Names and places only: a literal secret value (with --allow-literal-secrets) must never be printed.
      resources: loaded.resources.map((r) => ({ kind: r.kind, name: r.name, ...r.location, suspend: r.suspend })),
      blocked: loaded.blocked.map((b) => ({ kind: b.kind, name: b.name, ...b.location, reason: b.reason })),
      diagnostics,
    };
    io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    return errors === 0 ? 0 : 1;
  }
  for (const diagnostic of diagnostics)
    io.stdout.write(`${formatDiagnostic(shownDiagnostic(diagnostic, input.shown))}\n`);
  const summary = `${plural(loaded.resources.length, 'resource')} in ${plural(loaded.files.length, 'file')}, ${plural(errors, 'error')}`;
  io.stdout.write(`${summary}${warnings > 0 ? `, ${plural(warnings, 'warning')}` : ''}\n`);
  return errors === 0 ? 0 : 1;
}
