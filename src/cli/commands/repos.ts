// `converge repos`: the code-host repositories the service can see, for people writing spec.repository.
import type { VisibleRepository } from '../../core/repositories.js';
import { listVisibleRepositories } from '../../service/repositories.js';
import { UsageError } from '../../core/errors.js';
import type { Command } from '../command.js';
import { resolveSettings, settingOptions } from '../settings.js';
import { openTarget, requireApiUrl } from '../target.js';
import { COMMAND_SUMMARIES } from './summaries.js';

const FORMATS = ['table', 'json'] as const;

const COLUMNS: Array<[string, (row: VisibleRepository) => string]> = [
  ['ACCOUNT', (r) => r.account],
  ['INTEGRATION ID', (r) => r.integration_id],
  ['REPOSITORY', (r) => r.full_name],
  ['DEFAULT BRANCH', (r) => r.default_branch],
  ['URL', (r) => r.url],
];

/** A plain aligned table; the last column is not padded. */
function renderRepositoryTable(rows: VisibleRepository[]): string {
  if (rows.length === 0) return 'No repositories: the service lists no code-host integration, or none reaches a repository.\n';
  const cells = [COLUMNS.map(([title]) => title), ...rows.map((row) => COLUMNS.map(([, read]) => read(row)))];
  const widths = COLUMNS.map((_, i) => Math.max(...cells.map((line) => line[i]!.length)));
  const lines = cells.map((line) => line.map((cell, i) => (i === line.length - 1 ? cell : cell.padEnd(widths[i]! + 2))).join(''));
  return `${lines.join('\n')}\n`;
}

export const reposCommand: Command = {
  name: 'repos',
  summary: COMMAND_SUMMARIES.repos,
  usage: 'converge repos [--output table|json] [options]',
  positionals: [0, 0],
  options: {
    output: { type: 'string', short: 'o', placeholder: 'FMT', choices: FORMATS, description: 'table (default) or json' },
    ...settingOptions('apiUrl', 'apiKey', 'tenantId', 'emulatorState', 'requestTimeout'),
  },
  async run(args, io) {
    const output = (args.values.output as string | undefined) ?? 'table';
    if (!FORMATS.includes(output as (typeof FORMATS)[number])) {
      throw new UsageError(`--output "${output}" is not one of ${FORMATS.join(', ')}`);
    }
    const settings = requireApiUrl(resolveSettings(args, io.env));
    const target = await openTarget(settings);
    try {
      const rows = await listVisibleRepositories(target.client);
      io.stdout.write(output === 'json' ? `${JSON.stringify(rows, null, 2)}\n` : renderRepositoryTable(rows));
      return 0;
    } finally {
      await target.close();
    }
  },
};
