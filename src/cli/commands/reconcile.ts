// `converge reconcile [--write-secrets | --retry-failed [NAME...] | --confirm-delete NAME...] [--override-window]`: asks a running daemon to reconcile now (POST /reconcile), optionally writing secrets it cannot compare, releasing holds, confirming deletes or writing through a change window.
import { ConvergeError, UsageError } from '../../core/errors.js';
import { WEBHOOK_TOKEN_ENV } from '../../daemon/server/status-server.js';
import type { Command } from '../command.js';
import { resolveSettings, settingOptions } from '../settings.js';
import { daemonBaseUrl } from '../daemon-url.js';
import { COMMAND_SUMMARIES } from './summaries.js';

const FORMATS = ['text', 'json'] as const;

/** A reconcile of a big directory takes a while: the daemon answers when it has ended. */
const TIMEOUT_MS = 120_000;

interface ReconcileAnswer {
  error?: string;
  /** The reconcile that served the request; `requests`: how many requests it answered (a burst is coalesced). */
  reconcile?: { id: number; ok: boolean; error: string | null; enqueued: number; requests?: number } | null;
  writeSecrets?: { requested: 'all' | string[]; written: string[]; notWritten: string[]; heldBefore: string[] };
  retryFailed?: { requested: 'all' | string[]; released: string[]; rebuilt?: string[]; notHeld: string[]; undeclared?: string[] };
  confirmDelete?: { requested: string[]; deleted: string[]; notPending: string[]; pendingBefore: string[] };
  /** A change window held the reconcile's writes: its line (which window, until when, what writes now). */
  windowHeld?: string;
}


async function post(url: string, token: string, body: unknown): Promise<{ status: number; answer: ReconcileAnswer }> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      signal: AbortSignal.timeout(TIMEOUT_MS),
      headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
    throw new ConvergeError('E_STATUS', `no converge daemon answers at ${new URL(url).origin} (${cause}); is "converge run" running there? pass --url http://HOST:PORT`, { cause: error });
  }
  const text = await response.text();
  try {
    return { status: response.status, answer: JSON.parse(text) as ReconcileAnswer };
  } catch {
    throw new ConvergeError('E_STATUS', `${url} answered ${response.status} with something that is not JSON; is that a converge daemon?`);
  }
}

function render(answer: ReconcileAnswer): string {
  const lines: string[] = [];
  const r = answer.reconcile;
  const joined = r?.requests && r.requests > 1 ? ` (it served ${r.requests} requests at once)` : '';
  if (r) lines.push(r.ok ? `Reconcile #${r.id} done${joined}: ${r.enqueued} ${r.enqueued === 1 ? 'job' : 'jobs'} enqueued.` : `Reconcile #${r.id} FAILED${joined}: ${r.error ?? 'unknown error'}`);
  if (answer.windowHeld) lines.push(`Change window: ${answer.windowHeld}.`);
  const w = answer.writeSecrets;
  if (w) {
    if (w.written.length > 0) lines.push(`Secrets written once for: ${w.written.join(', ')} (their jobs are enqueued; see converge status).`);
    else lines.push('No secrets written: no resource was held as SecretsUnknown' + (w.requested === 'all' ? '.' : ' under those names.'));
    if (w.notWritten.length > 0) lines.push(`Not held as SecretsUnknown (nothing written): ${w.notWritten.join(', ')}${w.heldBefore.length ? `; held now: ${w.heldBefore.join(', ')}` : ''}`);
  }
  const f = answer.retryFailed;
  if (f) {
    if (f.released.length > 0) lines.push(`Holds released for: ${f.released.join(', ')} (written again where their plan differs; see converge status).`);
    if (f.rebuilt?.length) lines.push(`Rebuilt (the same input sent once more: a new revision each): ${f.rebuilt.join(', ')}.`);
    else lines.push('No hold released: no resource was held' + (f.requested === 'all' ? '.' : ' under those names.'));
    if (f.notHeld.length > 0) lines.push(`Not held (nothing released): ${f.notHeld.join(', ')}`);
    if (f.undeclared?.length) lines.push(`Declared in no manifest (nothing released): ${f.undeclared.join(', ')}; name a resource as metadata.name or Kind/name, as converge status lists them.`);
  }
  const c = answer.confirmDelete;
  if (c) {
    if (c.deleted.length > 0) lines.push(`Delete confirmed and enqueued for: ${c.deleted.join(', ')} (see converge status).`);
    if (c.notPending.length > 0) lines.push(`No delete pending (nothing deleted): ${c.notPending.join(', ')}${c.pendingBefore.length ? `; pending now: ${c.pendingBefore.join(', ')}` : ''}`);
  }
  return lines.join('\n') + '\n';
}

export const reconcileCommand: Command = {
  name: 'reconcile',
  summary: COMMAND_SUMMARIES.reconcile,
  usage: 'converge reconcile [--write-secrets [NAME...]] [--retry-failed [NAME...]] [--confirm-delete NAME...] [--override-window] [--url http://HOST:PORT]',
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
    'deployment has (NameTaken: a deleted deployment\'s tracing project keeps it), are held and released the same way.',
    '',
    'With --prune, a delete the daemon plans waits (DeletePending in converge status): for prune_grace under',
    'prune_mode auto, for a person under prune_mode confirm. --confirm-delete NAME... sends the pending deletes of',
    'the NAMEs given (each named: never all at once); a name with no delete pending is said and nothing is deleted.',
    '',
    'Inside a change window that blocks (the windows setting: a deny window, or outside every allow window), the daemon',
    'writes nothing on its own. This command\'s reconcile writes where the window says manual: true; --override-window',
    'writes whatever the window says (logged, and recorded in each written resource\'s history with who asked).',
    '',
    `Sends POST /reconcile to the daemon's status server with the token in ${WEBHOOK_TOKEN_ENV} ("Authorization:`,
    `Bearer TOKEN"). The endpoint is off unless the daemon runs with ${WEBHOOK_TOKEN_ENV} set; give this command the`,
    'same value in its environment. Requests that arrive while one waits join it; one that arrives while a reconcile',
    'runs gets the next one, so a burst of requests (or of git pushes on POST /webhook) costs at most two reconciles.',
  ].join('\n'),
  positionals: [0, 1_000],
  options: {
    'write-secrets': { type: 'boolean', description: 'write the secrets held back as SecretsUnknown (all, or the NAMEs given)' },
    'retry-failed': { type: 'boolean', description: 'release the holds of resources whose revision failed, whose write was refused or whose name is taken (all, or the NAMEs given)' },
    'confirm-delete': { type: 'boolean', description: 'send the pending deletes of the NAMEs given (prune_mode confirm; NAMEs required)' },
    'override-window': { type: 'boolean', description: 'write although a change window blocks writes and does not allow manual ones (logged, and recorded in the history)' },
    url: { type: 'string', placeholder: 'URL', description: 'status server of the daemon (default http://127.0.0.1:<http_port>)' },
    output: { type: 'string', short: 'o', placeholder: 'FMT', choices: FORMATS, description: 'text (default) or json (the daemon\'s answer)' },
    ...settingOptions('httpPort'),
  },
  async run(args, io) {
    const output = (args.values.output as string | undefined) ?? 'text';
    if (!FORMATS.includes(output as (typeof FORMATS)[number])) throw new UsageError(`--output "${output}" is not one of ${FORMATS.join(', ')}`);
    const names = args.positionals;
    const write = args.values['write-secrets'] === true;
    const retry = args.values['retry-failed'] === true;
    const confirm = args.values['confirm-delete'] === true;
    const override = args.values['override-window'] === true;
    if (confirm && names.length === 0) throw new UsageError('--confirm-delete takes the NAMEs whose delete to send (metadata.name or Kind/name, as converge status lists them): a delete is confirmed by name, never all at once');
    if (names.length > 0 && !write && !retry && !confirm) throw new UsageError(`names are for --write-secrets, --retry-failed or --confirm-delete; run "converge reconcile --retry-failed ${names.join(' ')}"`);
    const token = io.env[WEBHOOK_TOKEN_ENV];
    if (!token) {
      throw new UsageError(`${WEBHOOK_TOKEN_ENV} is not set; set it to the token the daemon runs with (the daemon's POST /reconcile is off unless it has ${WEBHOOK_TOKEN_ENV} too)`);
    }
    const explicit = args.values.url as string | undefined;
    const url = daemonBaseUrl(explicit ?? `http://127.0.0.1:${resolveSettings(args, io.env).httpPort}`);
    const named = names.length > 0 ? names : true;
    const body = { ...(write ? { writeSecrets: named } : {}), ...(retry ? { retryFailed: named } : {}), ...(confirm ? { confirmDelete: names } : {}), ...(override ? { overrideWindow: true } : {}) };
    const { status, answer } = await post(`${url}/reconcile`, token, body);
    if (status === 404) throw new ConvergeError('E_RECONCILE_OFF', `the daemon at ${url} has POST /reconcile off; start it with ${WEBHOOK_TOKEN_ENV} set (the same value as here)`);
    if (status === 401) throw new ConvergeError('E_RECONCILE_TOKEN', `the daemon at ${url} refused the token; set ${WEBHOOK_TOKEN_ENV} to the value the daemon runs with`);
    if (status === 400 || status === 405 || status === 413) throw new ConvergeError('E_RECONCILE', `the daemon at ${url} refused the request: ${answer.error ?? status}`);
    if (output === 'json') io.stdout.write(JSON.stringify(answer, null, 2) + '\n');
    else if (answer.error) io.stdout.write(`${answer.error}\n`);
    else io.stdout.write(render(answer));
    // A name no manifest declares is a request that could not be done (a typo, most often): 1, as a refusal.
    // So is a confirmed delete with none pending: nothing was deleted.
    return status === 200 && !answer.retryFailed?.undeclared?.length && !answer.confirmDelete?.notPending.length ? 0 : 1;
  },
};
