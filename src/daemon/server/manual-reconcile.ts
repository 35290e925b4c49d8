// POST /reconcile and /webhook (`converge reconcile`): requests coalesced into one reconcile each batch, with the secret writes and the rebuilds they ask for merged.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { holdsNamed, namingNone } from '../../core/holds.js';
import type { Leadership } from '../../leader/leadership.js';
import { MAX_PENDING_REQUESTS, type OperatorRequestStore, type StoredRequest } from '../../store/operator-requests.js';
import { OperatorRequests } from '../cycle/operator-requests.js';
import type { WindowGate } from '../cycle/window-gate.js';
import type { Reconciler } from '../reconcile/reconciler.js';
import type { ReconcileRequest } from './reconcile-request.js';

/** What a manual reconcile reads and asks of the daemon, as it is when the reconcile's turn comes. */
export interface ManualReconcileParts {
  stopping: boolean;
  reconciler: Reconciler | undefined;
  leadership: Leadership | undefined;
  /** Secrets held as SecretsUnknown that an operator asked to write (writeSecrets). */
  secretWrites: OperatorRequests;
  /** Released holds of failed revisions to rebuild (retryFailed). */
  rebuilds: OperatorRequests;
  /** Pending deletes a person confirmed (confirmDelete, prune_mode confirm): the names asked, and the deletes enqueued. */
  deleteConfirms: OperatorRequests;
  /** Change windows: the reconcile that serves a request is manual (its writes go where the window allows, or always with overrideWindow). */
  windows?: Pick<WindowGate, 'ask' | 'take' | 'held'> | undefined;
  /** Where a confirmation is stored before it is answered (src/store/applied-state.ts), so that a new leader finds it. */
  confirmations: { confirmDeletes(wanted: (key: string) => boolean): Promise<string[]> } | undefined;
  /** Where each request is kept from its arrival until a reconcile served it, so that a new leader serves it. */
  requests: Pick<OperatorRequestStore, 'add' | 'remove' | 'noteRebuild' | 'all'> | undefined;
  /** This replica's id (who took a request). */
  replica: string;
  /** Counts a request refused because MAX_PENDING_REQUESTS are kept already. */
  overflow: () => void;
  log: Logger;
}

export interface ManualAnswer {
  status: number;
  body: unknown;
}

type Names = true | readonly string[];

/** Requests that one reconcile serves: their asks merged, and each one's own ask to answer it with. */
interface Batch {
  writeSecrets: Names | undefined;
  retryFailed: Names | undefined;
  confirmDelete: string[] | undefined;
  /** Some request asked to write although a change window blocks (overrideWindow), and the replicas they came to. */
  overrideWindow: string[] | undefined;
  /** The kept requests (their ids in Redis) this batch serves, and the rebuilds a former leader noted for them. */
  ids: string[];
  rebuild: string[];
  waiters: Array<{ request: ReconcileRequest; resolve: (answer: ManualAnswer) => void }>;
}

/** What the batch's reconcile came to, from which each request's own answer is cut. */
interface Served {
  record: Awaited<ReturnType<Reconciler['request']>>;
  written: string[];
  heldBefore: string[];
  retried: { released: string[]; rebuilt: string[] } | undefined;
  /** The deletes confirmed and enqueued, and the resources whose delete was pending before the reconcile. */
  confirmed: { deleted: string[]; pendingBefore: string[] } | undefined;
  requests: number;
  /** The change window that held the reconcile's writes (its WindowHeld line), if one did. */
  windowHeld: string | undefined;
}

/** Every name of both, or true when either is true (absent when both are). */
function mergeNames(a: Names | undefined, b: Names | undefined): Names | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  if (a === true || b === true) return true;
  return [...new Set([...a, ...b])];
}

/** A standby or a stopping daemon refuses with 503 (undefined: this replica may reconcile). */
function refusal(parts: ManualReconcileParts): ManualAnswer | undefined {
  if (parts.stopping || !parts.reconciler)
    return { status: 503, body: { error: 'the daemon is stopping or not started' } };
  if (parts.leadership?.token() !== undefined) return undefined;
  const leader = parts.leadership?.status().leader ?? null;
  return {
    status: 503,
    body: {
      error: `this replica is a standby: the leader${leader ? ` (${leader.holder})` : ''} reconciles; send the request to it`,
      leader,
    },
  };
}

/**
 * Requests one reconcile at a time. A request that arrives while a batch waits joins it; one that arrives while a
 * batch's reconcile runs starts the next batch, which runs after it. A burst of any size is at most two reconciles,
 * and each request is answered with the reconcile it joined and its own part of the merged asks.
 */
export class ManualReconciles {
  private readonly parts: () => ManualReconcileParts;
  private queued: Batch | undefined;
  private running: Promise<void> | undefined;
  /** The ids of the kept requests this replica serves now (a take-up skips them). */
  private readonly serving = new Set<string>();

  constructor(parts: () => ManualReconcileParts) {
    this.parts = parts;
  }

  /**
   * Keeps a request that asks something in Redis, then answers once the reconcile that served it ended (503 at once
   * from a standby or a stopping daemon, or when it cannot be kept: MAX_PENDING_REQUESTS wait already, or Redis does
   * not answer).
   */
  async request(request: ReconcileRequest): Promise<ManualAnswer> {
    const parts = this.parts();
    const refused = refusal(parts);
    if (refused) return refused;
    const id = randomUUID();
    // A plain request (it asks nothing but a reconcile) is not kept: the replica that takes the lease reconciles at once.
    const stored = { ...request, at: new Date().toISOString(), by: parts.replica };
    const kept = asksSomething(request) ? await keep(parts, id, stored) : undefined;
    if (kept) return kept;
    return new Promise((resolve) => this.join(id, request, [], { request, resolve }));
  }

  /**
   * Serves the requests kept in Redis that no reconcile served (a former leader's, or this replica's before its
   * restart): called when this replica takes the lease. Returns how many it took up.
   */
  async takeUp(): Promise<number> {
    const parts = this.parts();
    if (refusal(parts) || !parts.requests) return 0;
    const kept = [...(await parts.requests.all())].filter(([id]) => !this.serving.has(id));
    for (const [id, stored] of kept) this.join(id, requestOf(stored), stored.rebuild ?? []);
    const from = [...new Set(kept.map(([, r]) => r.by))];
    if (kept.length > 0)
      parts.log.info({ requests: kept.length, from }, 'operator requests a former leader did not serve: served now');
    return kept.length;
  }

  private join(
    id: string,
    request: ReconcileRequest & { by?: string },
    rebuild: readonly string[],
    waiter?: Batch['waiters'][number],
  ): void {
    const batch = (this.queued ??= emptyBatch());
    const joined = { joined: batch.waiters.length, afterRunning: this.running !== undefined };
    this.parts().log.debug(joined, 'reconcile requested');
    batch.writeSecrets = mergeNames(batch.writeSecrets, request.writeSecrets);
    batch.retryFailed = mergeNames(batch.retryFailed, request.retryFailed);
    if (request.confirmDelete)
      batch.confirmDelete = [...new Set([...(batch.confirmDelete ?? []), ...request.confirmDelete])];
    if (request.overrideWindow)
      batch.overrideWindow = [...new Set([...(batch.overrideWindow ?? []), request.by ?? this.parts().replica])];
    batch.ids.push(id);
    batch.rebuild.push(...rebuild);
    this.serving.add(id);
    if (waiter) batch.waiters.push(waiter);
    this.running ??= this.drain();
  }

  private async drain(): Promise<void> {
    while (this.queued) {
      const batch = this.queued;
      this.queued = undefined;
      const parts = this.parts();
      const refused = refusal(parts);
      const served = refused ? undefined : await serve(batch, parts).catch((error: unknown) => error as Error);
      for (const id of batch.ids) this.serving.delete(id);
      for (const { request, resolve } of batch.waiters) {
        if (served instanceof Error) resolve({ status: 500, body: { error: 'internal error; see the daemon log' } });
        else resolve(served ? answerOf(request, served, parts.reconciler!) : refused!);
      }
      if (served instanceof Error)
        parts.log.warn({ error: served.message.split('\n')[0] }, 'reconcile on request failed');
    }
    this.running = undefined;
  }
}

/** Runs the batch's one reconcile with its merged asks. */
async function serve(batch: Batch, parts: ManualReconcileParts): Promise<Served> {
  const { secretWrites, rebuilds, deleteConfirms, log } = parts;
  const reconciler = parts.reconciler!;
  const heldBefore = reconciler.tracker.secretsUnknown();
  const pendingBefore = reconciler.tracker.pendingDeletes();
  if (batch.writeSecrets) secretWrites.add(batch.writeSecrets);
  if (batch.confirmDelete) {
    // Stored in Redis before the reconcile and its answer: a leader that dies after answering leaves it to the next one.
    const asked = new OperatorRequests();
    asked.add(batch.confirmDelete);
    await parts.confirmations?.confirmDeletes((key) => asked.approved(key));
    deleteConfirms.add(batch.confirmDelete);
  }
  // The holds to rebuild are noted with the requests before they are released: a leader that dies between the two
  // leaves the rebuild to the next one, which finds the holds released.
  const note = async (rebuild: readonly string[]): Promise<void> => parts.requests?.noteRebuild(batch.ids, rebuild);
  const released = batch.retryFailed ? await reconciler.releaseHolds(batch.retryFailed, note) : undefined;
  if (released) rebuilds.add(released.rebuild);
  if (batch.rebuild.length > 0) rebuilds.add(batch.rebuild);
  let record;
  let written: string[];
  let rebuilt: string[];
  let deleted: string[];
  // Logged before the reconcile: a window's override is an operator's word, said whatever the reconcile comes to.
  if (batch.overrideWindow)
    log.warn(
      { from: batch.overrideWindow, requests: batch.waiters.length },
      'change window overridden on request (converge reconcile --override-window): this reconcile writes although a window blocks',
    );
  parts.windows?.ask(batch.overrideWindow !== undefined);
  try {
    record = await reconciler.request('manual');
  } finally {
    parts.windows?.take();
    written = secretWrites.take();
    rebuilt = rebuilds.take();
    // A confirmation the reconcile did not serve ends with it: a delete is confirmed for what a person saw pending.
    deleted = deleteConfirms.take();
  }
  // Served: no longer kept. A reconcile that did not run (the lease lost, stopping) leaves them to the next leader.
  if (record) await parts.requests?.remove(batch.ids);
  const requests = batch.waiters.length;
  if (batch.writeSecrets)
    log.info(
      { requested: batch.writeSecrets === true ? 'all' : batch.writeSecrets, written, requests },
      'secrets written on request (converge reconcile --write-secrets)',
    );
  if (batch.confirmDelete)
    log.info(
      { requested: batch.confirmDelete, deleted, requests },
      'deletes confirmed on request (converge reconcile --confirm-delete)',
    );
  if (requests > 1)
    log.info({ reconcile: record?.id, requests }, 'reconcile requests coalesced: one reconcile answered them');
  const retried = released ? { released: released.released, rebuilt } : undefined;
  return {
    record,
    written,
    heldBefore,
    retried,
    confirmed: batch.confirmDelete ? { deleted, pendingBefore } : undefined,
    requests,
    windowHeld: parts.windows?.held(),
  };
}

/** A batch that asks nothing yet. */
function emptyBatch(): Batch {
  return {
    writeSecrets: undefined,
    retryFailed: undefined,
    confirmDelete: undefined,
    overrideWindow: undefined,
    ids: [],
    rebuild: [],
    waiters: [],
  };
}

/** Keeps a request in Redis; the answer to send instead when it cannot be (undefined: kept, or no store). */
async function keep(
  parts: ManualReconcileParts,
  id: string,
  request: StoredRequest,
): Promise<ManualAnswer | undefined> {
  const added = await parts.requests?.add(id, request).catch((error: unknown) => error as Error);
  if (added === undefined || added === true) return undefined;
  if (added instanceof Error) {
    parts.log.warn({ error: added.message.split('\n')[0] }, 'reconcile request refused: it could not be kept in Redis');
    const error = 'the request could not be kept in Redis (a new leader would lose it); try again when Redis answers';
    return { status: 503, body: { error } };
  }
  parts.overflow();
  parts.log.warn({ pending: MAX_PENDING_REQUESTS }, 'reconcile request refused: too many requests wait to be served');
  const error = `${MAX_PENDING_REQUESTS} requests wait to be served already; try again after the reconcile in progress`;
  return { status: 503, body: { error } };
}

/** True when the request asks more than a reconcile: secret writes, rebuilds or deletes, which a failover must keep. */
function asksSomething(request: ReconcileRequest): boolean {
  return Boolean(request.writeSecrets ?? request.retryFailed ?? request.confirmDelete ?? request.overrideWindow);
}

/** What a kept request asks. */
function requestOf(stored: StoredRequest): ReconcileRequest & { by: string } {
  const { writeSecrets, retryFailed, confirmDelete, overrideWindow } = stored;
  return {
    ...(writeSecrets ? { writeSecrets } : {}),
    ...(retryFailed ? { retryFailed } : {}),
    ...(confirmDelete ? { confirmDelete } : {}),
    ...(overrideWindow ? { overrideWindow } : {}),
    by: stored.by,
  };
}

/** The keys of `keys` that `names` asks for (every one for true). */
function asked(keys: readonly string[], names: Names): string[] {
  return holdsNamed(keys, names).released;
}

/** One request's answer: the reconcile it joined, and what of its own asks that reconcile did. */
function answerOf(request: ReconcileRequest, served: Served, reconciler: Reconciler): ManualAnswer {
  const { record } = served;
  const body: Record<string, unknown> = {
    reconcile: record
      ? {
          id: record.id,
          ok: record.ok,
          error: record.error,
          enqueued: record.enqueued,
          summary: record.summary,
          requests: served.requests,
        }
      : null,
  };
  if (served.windowHeld) body.windowHeld = served.windowHeld;
  const write = request.writeSecrets;
  if (write) {
    const written = asked(served.written, write);
    const notWritten = write === true ? [] : namingNone(write, served.written);
    body.writeSecrets = {
      requested: write === true ? 'all' : write,
      written,
      notWritten,
      heldBefore: served.heldBefore,
    };
  }
  const retry = request.retryFailed;
  if (retry && served.retried) {
    // A name the manifests do not declare (read after the reconcile, so its plan is the one that counts) is said apart.
    const unmatched = retry === true ? [] : namingNone(retry, served.retried.released);
    const undeclared = reconciler.undeclared(unmatched);
    const notHeld = unmatched.filter((name) => !undeclared.includes(name));
    body.retryFailed = {
      requested: retry === true ? 'all' : retry,
      released: asked(served.retried.released, retry),
      rebuilt: asked(served.retried.rebuilt, retry),
      notHeld,
      undeclared,
    };
  }
  const confirm = request.confirmDelete;
  if (confirm && served.confirmed) {
    const deleted = asked(served.confirmed.deleted, confirm);
    body.confirmDelete = {
      requested: confirm,
      deleted,
      notPending: namingNone(confirm, served.confirmed.deleted),
      pendingBefore: served.confirmed.pendingBefore,
    };
  }
  return { status: record ? (record.ok ? 200 : 502) : 503, body };
}
