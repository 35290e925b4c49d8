// `converge export --out DIR`: one manifest per live deployment (and provider, when the service lists them), ready to commit.
import { EXPORT_SCHEMA_NAME } from './values.js';
import type { Command } from '../command.js';
import { settingOptions } from '../settings.js';
import { COMMAND_SUMMARIES } from './summaries.js';
export const exportCommand: Command = {
  name: 'export',
  summary: COMMAND_SUMMARIES.export,
  usage:
    'converge export (--out DIR [--force] | --stdout | --out BASE --overlay-out DIR [--vars FILE]... [--overlay DIR]...) [--name-prefix P] [--schema-ref REF] [options]',
  details:
    'Each manifest carries the annotation converge/adopt: "true" and every secret as valueFrom: { env: NAME } (the variables are listed on stderr).\n' +
    `--out also writes ${EXPORT_SCHEMA_NAME} (the JSON Schema of this converge) beside the files; each modeline points at it by a relative path.\n` +
    'With those variables set, `converge plan DIR` shows only the secret writes that take each deployment over. Previews, deployments\n' +
    'being deleted, and live values the manifest schema refuses are skipped and named on stderr. A field only a create needs\n' +
    '(graph_config_path) that is missing live is left out: the plan is clean, and only a re-create is blocked, naming it.\n' +
    'With --overlay-out DIR, --out names a base directory that is read, never written (unless it holds no manifest: then the\n' +
    'base is written there): DIR gets the overlay of this workspace, a merge patch per resource whose live spec differs from the\n' +
    "base's (with --vars and --overlay applied; secrets not compared) and a converge/overlay: add document per live resource\n" +
    'the base lacks (docs/environments.md).',
  positionals: [0, 0],
  options: {
    out: {
      type: 'string',
      placeholder: 'DIR',
      description: 'directory to write the manifests to (created when missing)',
    },
    force: { type: 'boolean', description: 'overwrite manifest files that exist already' },
    stdout: { type: 'boolean', description: 'print the documents to stdout instead of writing files' },
    'schema-ref': {
      type: 'string',
      placeholder: 'REF',
      description: `$schema of each modeline (a URL or path) instead of the ${EXPORT_SCHEMA_NAME} written beside the files`,
    },
    'overlay-out': {
      type: 'string',
      placeholder: 'DIR',
      description: 'write the overlay that makes the base in --out equal this workspace (docs/environments.md)',
    },
    ...settingOptions(
      'apiUrl',
      'apiKey',
      'tenantId',
      'namePrefix',
      'emulatorState',
      'requestTimeout',
      'vars',
      'overlays',
    ),
  },
  run: async (args, io) => (await import('./export-run.js')).runExportCommand(args, io),
};
