// POST /reconcile (`converge reconcile`): one reconcile now, with the secret writes and the rebuilds it asks for.
import type { Logger } from 'pino';
import type { Leadership } from '../leader/leadership.js';
import type { OperatorRequests } from './operator-requests.js';
import type { Reconciler } from './reconciler.js';
import type { ReconcileRequest } from './status-server.js';

/** What a manual reconcile reads and asks of the daemon, as it is when the reconcile's turn comes. */
export interface ManualReconcileParts {
  stopping: boolean;
  reconciler: Reconciler | undefined;
  leadership: Leadership | undefined;
  /** Secrets held as SecretsUnknown that an operator asked to write (writeSecrets). */
  secretWrites: OperatorRequests;
  /** Released holds of failed revisions to rebuild (retryFailed). */
  rebuilds: OperatorRequests;
  log: Logger;
}

/** Runs one reconcile on request (a standby or a stopping daemon refuses with 503); answers once that reconcile ended. */
export async function reconcileOnRequest(request: ReconcileRequest, parts: ManualReconcileParts): Promise<{ status: number; body: unknown }> {
  const { reconciler, leadership, secretWrites, rebuilds, log } = parts;
  if (parts.stopping || !reconciler) return { status: 503, body: { error: 'the daemon is stopping or not started' } };
  if (leadership?.token() === undefined) {
    const leader = leadership?.status().leader ?? null;
    return { status: 503, body: { error: `this replica is a standby: the leader${leader ? ` (${leader.holder})` : ''} reconciles; send the request to it`, leader } };
  }
  const requested = request.writeSecrets;
  const held = reconciler.tracker.secretsUnknown();
  if (requested) secretWrites.add(requested);
  const retried = request.retryFailed ? await reconciler.releaseHolds(request.retryFailed) : undefined;
  if (retried) rebuilds.add(retried.rebuild);
  let record;
  let written: string[] = [];
  let rebuilt: string[];
  try {
    record = await reconciler.request('manual');
  } finally {
    written = secretWrites.take();
    rebuilt = rebuilds.take();
  }
  if (requested) log.info({ requested: requested === true ? 'all' : requested, written }, 'secrets written on request (converge reconcile --write-secrets)');
  const body: Record<string, unknown> = {
    reconcile: record ? { id: record.id, ok: record.ok, error: record.error, enqueued: record.enqueued, summary: record.summary } : null,
  };
  if (requested) {
    const unknownNames = requested === true ? [] : requested.filter((n) => !written.some((k) => k === n || k.slice(k.indexOf('/') + 1) === n));
    body.writeSecrets = { requested: requested === true ? 'all' : requested, written, notWritten: unknownNames, heldBefore: held };
  }
  if (request.retryFailed && retried) {
    // A name the manifests do not declare (read after the reconcile, so its plan is the one that counts) is said apart.
    const undeclared = reconciler.undeclared(retried.unmatched);
    const notHeld = retried.unmatched.filter((name) => !undeclared.includes(name));
    body.retryFailed = { requested: request.retryFailed === true ? 'all' : request.retryFailed, released: retried.released, rebuilt, notHeld, undeclared };
  }
  return { status: record ? (record.ok ? 200 : 502) : 503, body };
}
