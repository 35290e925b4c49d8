// What `converge repos` runs (its flags and --help are in repos.ts, loaded without this).
import { REPOS_FORMATS } from './values.js';
import type { VisibleRepository } from '../../core/repositories.js';
import { listVisibleRepositories } from '../../service/repositories.js';
import { UsageError } from '../../core/errors.js';
import { resolveSettings } from '../settings.js';
import { openTarget, requireApiUrl } from '../target.js';
import type { CommandIo, ParsedArgs } from '../command.js';

const COLUMNS: Array<[string, (row: VisibleRepository) => string]> = [
  ['ACCOUNT', (r) => r.account],
  ['INTEGRATION ID', (r) => r.integration_id],
  ['REPOSITORY', (r) => r.full_name],
  ['DEFAULT BRANCH', (r) => r.default_branch],
  ['URL', (r) => r.url],
];

/** A plain aligned table; the last column is not padded. */
function renderRepositoryTable(rows: VisibleRepository[]): string {
  if (rows.length === 0)
    return 'No repositories: the service lists no code-host integration, or none reaches a repository.\n';
  const cells = [COLUMNS.map(([title]) => title), ...rows.map((row) => COLUMNS.map(([, read]) => read(row)))];
  const widths = COLUMNS.map((_, i) => Math.max(...cells.map((line) => line[i]!.length)));
  const lines = cells.map((line) =>
    line.map((cell, i) => (i === line.length - 1 ? cell : cell.padEnd(widths[i]! + 2))).join(''),
  );
  return `${lines.join('\n')}\n`;
}

/** Runs `converge repos`; returns the exit code. */
export async function runReposCommand(args: ParsedArgs, io: CommandIo): Promise<number> {
  const output = (args.values.output as string | undefined) ?? 'table';
  if (!REPOS_FORMATS.includes(output as (typeof REPOS_FORMATS)[number])) {
    throw new UsageError(`--output "${output}" is not one of ${REPOS_FORMATS.join(', ')}`);
  }
  const settings = requireApiUrl(await resolveSettings(args, io.env));
  const target = await openTarget(settings);
  try {
    const rows = await listVisibleRepositories(target.client);
    io.stdout.write(output === 'json' ? `${JSON.stringify(rows, null, 2)}\n` : renderRepositoryTable(rows));
    return 0;
  } finally {
    await target.close();
  }
}
