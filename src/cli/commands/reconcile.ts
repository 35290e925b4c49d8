// `converge reconcile [--write-secrets | --retry-failed [NAME...] | --confirm-delete NAME...] [--override-window]`: asks a running daemon to reconcile now (POST /reconcile), optionally writing secrets it cannot compare, releasing holds, confirming deletes or writing through a change window.
import { RECONCILE_FORMATS } from './values.js';
import { WEBHOOK_TOKEN_ENV } from '../../daemon/server/webhook-token.js';
import type { Command } from '../command.js';
import { settingOptions } from '../settings.js';
import { COMMAND_SUMMARIES } from './summaries.js';
export const reconcileCommand: Command = {
  name: 'reconcile',
  summary: COMMAND_SUMMARIES.reconcile,
  usage:
    'converge reconcile [--write-secrets [NAME...]] [--retry-failed [NAME...]] [--confirm-delete NAME...] [--override-window] [--url http://HOST:PORT]',
  details: [
    'The daemon never re-sends secret values it cannot compare (the service hides them and its applied state holds',
    'no record: a first start, or a Redis that lost its data): such a resource shows as out_of_sync, SecretsUnknown,',
    'in converge status. --write-secrets writes them once (every held resource, or the NAMEs given: metadata.name',
    'or Kind/name); each write may start a revision. Without flags: one reconcile now.',
    '',
    'A deployment whose revision failed (BUILD_FAILED, DEPLOY_FAILED, CREATE_FAILED) is held: the daemon never sends',
    'that same desired state again (status: out_of_sync or synced, RevisionFailed; health degraded). A changed manifest',
    'is written at once. --retry-failed releases the hold (every held resource, or the NAMEs given): a held deployment',
    'whose plan differs is written; one that matches its manifest is rebuilt (its revision fields sent once more).',
    'A write the service refused for good (400, 413, 422: WriteRefused), and a create answered 409 whose name no listed',
    "deployment has (NameTaken: a deleted deployment's tracing project keeps it), are held and released the same way.",
    '',
    'With --prune, a delete the daemon plans waits (DeletePending in converge status): for prune_grace under',
    'prune_mode auto, for a person under prune_mode confirm. --confirm-delete NAME... sends the pending deletes of',
    'the NAMEs given (each named: never all at once); a name with no delete pending is said and nothing is deleted.',
    '',
    'Inside a change window that blocks (the windows setting: a deny window, or outside every allow window), the daemon',
    "writes nothing on its own. This command's reconcile writes where the window says manual: true; --override-window",
    "writes whatever the window says (logged, and recorded in each written resource's history with who asked).",
    '',
    `Sends POST /reconcile to the daemon's status server with the token in ${WEBHOOK_TOKEN_ENV} ("Authorization:`,
    `Bearer TOKEN"). The endpoint is off unless the daemon runs with ${WEBHOOK_TOKEN_ENV} set; give this command the`,
    'same value in its environment. Requests that arrive while one waits join it; one that arrives while a reconcile',
    'runs gets the next one, so a burst of requests (or of git pushes on POST /webhook) costs at most two reconciles.',
  ].join('\n'),
  positionals: [0, 1_000],
  options: {
    'write-secrets': {
      type: 'boolean',
      description: 'write the secrets held back as SecretsUnknown (all, or the NAMEs given)',
    },
    'retry-failed': {
      type: 'boolean',
      description:
        'release the holds of resources whose revision failed, whose write was refused or whose name is taken (all, or the NAMEs given)',
    },
    'confirm-delete': {
      type: 'boolean',
      description: 'send the pending deletes of the NAMEs given (prune_mode confirm; NAMEs required)',
    },
    'override-window': {
      type: 'boolean',
      description:
        'write although a change window blocks writes and does not allow manual ones (logged, and recorded in the history)',
    },
    url: {
      type: 'string',
      placeholder: 'URL',
      description: 'status server of the daemon (default http://127.0.0.1:<http_port>)',
    },
    output: {
      type: 'string',
      short: 'o',
      placeholder: 'FMT',
      choices: RECONCILE_FORMATS,
      description: "text (default) or json (the daemon's answer)",
    },
    ...settingOptions('httpPort'),
  },
  run: async (args, io) => (await import('./reconcile-run.js')).runReconcileCommand(args, io),
};
