// What `converge reconcile` runs (its flags and --help are in reconcile.ts, loaded without this).
import { RECONCILE_FORMATS } from './values.js';
import { ConvergeError, UsageError } from '../../core/errors.js';
import { WEBHOOK_TOKEN_ENV } from '../../daemon/server/webhook-token.js';
import { resolveSettings } from '../settings.js';
import { daemonBaseUrl } from '../daemon-url.js';
import type { CommandIo, ParsedArgs } from '../command.js';

/** A reconcile of a big directory takes a while: the daemon answers when it has ended. */
const TIMEOUT_MS = 120_000;

interface ReconcileAnswer {
  error?: string;
  /** The reconcile that served the request; `requests`: how many requests it answered (a burst is coalesced). */
  reconcile?: { id: number; ok: boolean; error: string | null; enqueued: number; requests?: number } | null;
  writeSecrets?: { requested: 'all' | string[]; written: string[]; notWritten: string[]; heldBefore: string[] };
  retryFailed?: {
    requested: 'all' | string[];
    released: string[];
    rebuilt?: string[];
    notHeld: string[];
    undeclared?: string[];
  };
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
    throw new ConvergeError(
      'E_STATUS',
      `no converge daemon answers at ${new URL(url).origin} (${cause}); is "converge run" running there? pass --url http://HOST:PORT`,
      { cause: error },
    );
  }
  const text = await response.text();
  try {
    return { status: response.status, answer: JSON.parse(text) as ReconcileAnswer };
  } catch {
    throw new ConvergeError(
      'E_STATUS',
      `${url} answered ${response.status} with something that is not JSON; is that a converge daemon?`,
    );
  }
}

function render(answer: ReconcileAnswer): string {
  const lines: string[] = [];
  const r = answer.reconcile;
  const joined = r?.requests && r.requests > 1 ? ` (it served ${r.requests} requests at once)` : '';
  if (r)
    lines.push(
      r.ok
        ? `Reconcile #${r.id} done${joined}: ${r.enqueued} ${r.enqueued === 1 ? 'job' : 'jobs'} enqueued.`
        : `Reconcile #${r.id} FAILED${joined}: ${r.error ?? 'unknown error'}`,
    );
  if (answer.windowHeld) lines.push(`Change window: ${answer.windowHeld}.`);
  const w = answer.writeSecrets;
  if (w) {
    if (w.written.length > 0)
      lines.push(`Secrets written once for: ${w.written.join(', ')} (their jobs are enqueued; see converge status).`);
    else
      lines.push(
        'No secrets written: no resource was held as SecretsUnknown' +
          (w.requested === 'all' ? '.' : ' under those names.'),
      );
    if (w.notWritten.length > 0)
      lines.push(
        `Not held as SecretsUnknown (nothing written): ${w.notWritten.join(', ')}${w.heldBefore.length ? `; held now: ${w.heldBefore.join(', ')}` : ''}`,
      );
  }
  const f = answer.retryFailed;
  if (f) {
    if (f.released.length > 0)
      lines.push(
        `Holds released for: ${f.released.join(', ')} (written again where their plan differs; see converge status).`,
      );
    if (f.rebuilt?.length)
      lines.push(`Rebuilt (the same input sent once more: a new revision each): ${f.rebuilt.join(', ')}.`);
    else lines.push('No hold released: no resource was held' + (f.requested === 'all' ? '.' : ' under those names.'));
    if (f.notHeld.length > 0) lines.push(`Not held (nothing released): ${f.notHeld.join(', ')}`);
    if (f.undeclared?.length)
      lines.push(
        `Declared in no manifest (nothing released): ${f.undeclared.join(', ')}; name a resource as metadata.name or Kind/name, as converge status lists them.`,
      );
  }
  const c = answer.confirmDelete;
  if (c) {
    if (c.deleted.length > 0)
      lines.push(`Delete confirmed and enqueued for: ${c.deleted.join(', ')} (see converge status).`);
    if (c.notPending.length > 0)
      lines.push(
        `No delete pending (nothing deleted): ${c.notPending.join(', ')}${c.pendingBefore.length ? `; pending now: ${c.pendingBefore.join(', ')}` : ''}`,
      );
  }
  return lines.join('\n') + '\n';
}

/** Runs `converge reconcile [--write-secrets | --retry-failed [NAME...] | --confirm-delete NAME...]`; returns the exit code. */
export async function runReconcileCommand(args: ParsedArgs, io: CommandIo): Promise<number> {
  const output = (args.values.output as string | undefined) ?? 'text';
  if (!RECONCILE_FORMATS.includes(output as (typeof RECONCILE_FORMATS)[number]))
    throw new UsageError(`--output "${output}" is not one of ${RECONCILE_FORMATS.join(', ')}`);
  const names = args.positionals;
  const write = args.values['write-secrets'] === true;
  const retry = args.values['retry-failed'] === true;
  const confirm = args.values['confirm-delete'] === true;
  const override = args.values['override-window'] === true;
  if (confirm && names.length === 0)
    throw new UsageError(
      '--confirm-delete takes the NAMEs whose delete to send (metadata.name or Kind/name, as converge status lists them): a delete is confirmed by name, never all at once',
    );
  if (names.length > 0 && !write && !retry && !confirm)
    throw new UsageError(
      `names are for --write-secrets, --retry-failed or --confirm-delete; run "converge reconcile --retry-failed ${names.join(' ')}"`,
    );
  const token = io.env[WEBHOOK_TOKEN_ENV];
  if (!token) {
    throw new UsageError(
      `${WEBHOOK_TOKEN_ENV} is not set; set it to the token the daemon runs with (the daemon's POST /reconcile is off unless it has ${WEBHOOK_TOKEN_ENV} too)`,
    );
  }
  const explicit = args.values.url as string | undefined;
  const url = daemonBaseUrl(explicit ?? `http://127.0.0.1:${(await resolveSettings(args, io.env)).httpPort}`);
  const named = names.length > 0 ? names : true;
  const body = {
    ...(write ? { writeSecrets: named } : {}),
    ...(retry ? { retryFailed: named } : {}),
    ...(confirm ? { confirmDelete: names } : {}),
    ...(override ? { overrideWindow: true } : {}),
  };
  const { status, answer } = await post(`${url}/reconcile`, token, body);
  if (status === 404)
    throw new ConvergeError(
      'E_RECONCILE_OFF',
      `the daemon at ${url} has POST /reconcile off; start it with ${WEBHOOK_TOKEN_ENV} set (the same value as here)`,
    );
  if (status === 401)
    throw new ConvergeError(
      'E_RECONCILE_TOKEN',
      `the daemon at ${url} refused the token; set ${WEBHOOK_TOKEN_ENV} to the value the daemon runs with`,
    );
  if (status === 400 || status === 405 || status === 413)
    throw new ConvergeError('E_RECONCILE', `the daemon at ${url} refused the request: ${answer.error ?? status}`);
  if (output === 'json') io.stdout.write(JSON.stringify(answer, null, 2) + '\n');
  else if (answer.error) io.stdout.write(`${answer.error}\n`);
  else io.stdout.write(render(answer));
  // A name no manifest declares is a request that could not be done (a typo, most often): 1, as a refusal.
  // So is a confirmed delete with none pending: nothing was deleted.
  return status === 200 && !answer.retryFailed?.undeclared?.length && !answer.confirmDelete?.notPending.length ? 0 : 1;
}
