// One OAuthProvider: read it by id right before writing and PATCH what differs; where the service cannot read providers, the applied record decides.
import { BlockedError, ServiceError } from '../../core/errors.js';
import { blockedNow, liveChanged, undecidedNow } from '../../core/write-premise.js';
import {
  resourceKey,
  type AppliedRecord,
  type LiveProvider,
  type Ownership,
  type ProviderResource,
  type WriteAnswer,
} from '../../core/model.js';
import type { CreateProviderRequest, PatchProviderRequest } from '../../core/wire/schema.js';
import type { DesiredSecrets, JobWrite, PendingWrite, SyncPorts, SyncResult } from '../../core/kinds/ports.js';
import {
  CLIENT_SECRET,
  diffProvider,
  PROVIDER_CHANGED_REASON,
  type ProviderDiff,
} from '../../core/kinds/oauth-provider/diff.js';

/**
 * How far the service's clock may be behind ours when deciding that a provider found after a lost answer shows this
 * job's write (its created_at, or updated_at for a PATCH, is after our first send, less this margin).
 */
const CLOCK_SKEW_MS = 120_000;

const CREATE_ANSWER_LOST =
  'an earlier attempt created the provider but its answer was lost; converge recorded it as applied';
const PATCH_ANSWER_LOST = 'the answer to an earlier attempt was lost; live state shows its write landed';

/** Why a create answered 409 that no earlier attempt explains blocks the provider (a service that cannot read providers). */
export function providerExistsReason(name: string): string {
  return (
    `the service already has an OAuth provider "${name}" that converge did not create, and it cannot read providers, ` +
    `so converge has never seen its definition; ${PROVIDER_CHANGED_REASON}`
  );
}

/** Sends the decided `write` of a provider: creates, discovers or updates it so the service holds what the manifest declares. */
export async function syncProvider(resource: ProviderResource, write: JobWrite, ports: SyncPorts): Promise<SyncResult> {
  const reads = await ports.service.providerReads();
  return reads.readable ? syncAgainstLive(resource, write, ports) : syncFromRecords(resource, write, ports);
}

/**
 * The one check of the write step (as for deployments): whether the change against what it read still fits the decided
 * write. A secret this process cannot resolve is a failure of the job, not a change.
 */
function premiseBroken(
  write: JobWrite,
  diff: ProviderDiff,
  state: Pick<State, 'key' | 'secrets'>,
  live: LiveProvider | undefined | null,
): SyncResult | undefined {
  const blocked = blockedNow(diff.change, state.key, state.secrets.errors);
  if (blocked) return blocked;
  // null: the service cannot read providers, so only the applied record tells what exists.
  if (write.op === 'create' && live)
    return liveChanged(`an OAuth provider "${live.provider_id}" exists now; the decision was to create it`);
  if (write.op !== 'create' && live === undefined && diff.request) return liveChanged('the provider is gone');
  return undecidedNow(write, diff.change);
}

/** What one sync knows before it writes. */
interface State {
  key: string;
  secrets: DesiredSecrets;
  applied: AppliedRecord | undefined;
  earlier: PendingWrite | undefined;
}

async function readState(resource: ProviderResource, ports: SyncPorts): Promise<State> {
  const key = resourceKey('OAuthProvider', resource.name);
  const secrets = await ports.desiredSecrets(resource);
  const { applied, pending: earlier } = await ports.appliedState.read(key);
  return { key, secrets, applied, earlier };
}

function diffAgainst(resource: ProviderResource, state: State, live: LiveProvider | undefined): ProviderDiff {
  return diffProvider(resource, {
    secretHashes: state.secrets.hashes,
    secretErrors: state.secrets.errors,
    ...(state.applied ? { applied: state.applied } : {}),
    provider: { live },
  });
}

/** The secret hashes a write of `diff` records: client_secret's when the write sends it. */
function writtenSecrets(diff: ProviderDiff, state: State): Record<string, string> {
  const request = diff.request;
  const hash = state.secrets.hashes[CLIENT_SECRET];
  if (!request || request.op === 'discover' || !request.sendClientSecret || hash === undefined) return {};
  return { [CLIENT_SECRET]: hash };
}

/**
 * Whether live state shows that an earlier write whose answer was lost landed: the provider was created (or, for a
 * PATCH, updated) after that write was first sent, and every field but the secret matches the manifest.
 */
function earlierLanded(earlier: PendingWrite, live: LiveProvider, diff: ProviderDiff): boolean {
  if (earlier.op !== 'create-provider' && earlier.op !== 'discover-provider' && earlier.op !== 'patch-provider')
    return false;
  const at = Date.parse(earlier.op === 'patch-provider' ? live.updated_at : live.created_at);
  if (!(at >= Date.parse(earlier.sentAt) - CLOCK_SKEW_MS)) return false;
  return diff.change.action !== 'blocked' && diff.change.fields.every((field) => field.path === CLIENT_SECRET);
}

/**
 * Level-triggered against the live provider: GET it by id, settle an earlier write whose answer was lost, then create
 * it when the service has none, or PATCH only the fields that differ (client_secret only when its hash changed). A
 * create that meets a 409 (made elsewhere meanwhile) reads the provider and patches what differs instead.
 */
async function syncAgainstLive(resource: ProviderResource, write: JobWrite, ports: SyncPorts): Promise<SyncResult> {
  const state = await readState(resource, ports);
  const live = await ports.service.getProvider(resource.name);
  let diff = diffAgainst(resource, state, live);
  let settled: string | undefined;
  if (state.earlier && live && earlierLanded(state.earlier, live, diff)) {
    const created = state.earlier.op !== 'patch-provider';
    state.applied = await ports.appliedState.recordWrite(
      state.key,
      {
        secrets: state.earlier.secrets,
        definitionHash: diff.definitionHash,
        ...ownershipOfWrite(state, live.id, created),
        answer: providerAnswer('adopted'),
      },
      state.applied ?? null,
    );
    state.earlier = undefined;
    settled = created ? CREATE_ANSWER_LOST : PATCH_ANSWER_LOST;
    diff = diffAgainst(resource, state, live);
  }
  if (!diff.request) {
    if (settled) return { outcome: 'adopted', new_revision: false, message: settled };
    if (diff.change.action !== 'blocked') {
      if (state.earlier) await ports.appliedState.clearPending(state.key);
      // someone else brought it to the manifest: nothing to write; keep the record's definition current
      if (state.applied && state.applied.definitionHash !== diff.definitionHash) {
        await ports.appliedState.recordWrite(
          state.key,
          { secrets: {}, definitionHash: diff.definitionHash },
          state.applied,
        );
      }
      return { outcome: 'unchanged', new_revision: false };
    }
  }
  const broken = premiseBroken(write, diff, state, settled ? null : live);
  if (broken) return broken;
  const request = diff.request!;
  if (request.op !== 'patch') {
    const created = await sendCreate(resource, ports, state, diff);
    // 409: a provider of this id was made elsewhere between the read and the create; the decision was to create it.
    return (
      created ??
      liveChanged(`the create was answered 409: an OAuth provider "${resource.name}" was made elsewhere meanwhile`)
    );
  }
  return sendPatch(resource, ports, state, diff, request);
}

/** Sends the create (or discovery); undefined when the service answered 409. */
async function sendCreate(
  resource: ProviderResource,
  ports: SyncPorts,
  state: State,
  diff: ProviderDiff,
): Promise<SyncResult | undefined> {
  const request = diff.request!;
  const written = writtenSecrets(diff, state);
  const sameWrite =
    state.earlier !== undefined &&
    state.earlier.definitionHash === diff.definitionHash &&
    state.earlier.op !== 'patch-provider';
  const refused = await ports.writeGate?.();
  if (refused) return refused;
  await ports.appliedState.setPending(state.key, {
    op: request.op === 'discover' ? 'discover-provider' : 'create-provider',
    secrets: written,
    definitionHash: diff.definitionHash,
    sentAt: sameWrite ? state.earlier!.sentAt : ports.now().toISOString(),
  });
  let answer: unknown;
  try {
    if (request.op === 'create') {
      const body: CreateProviderRequest = { ...request.body };
      if (request.sendClientSecret) body.client_secret = (await state.secrets.values([CLIENT_SECRET]))[CLIENT_SECRET]!;
      answer = await ports.service.createProvider(body);
    } else if (request.op === 'discover') {
      answer = await ports.service.discoverProvider(request.body);
    }
  } catch (error) {
    if (!(error instanceof ServiceError) || error.status !== 409) throw error;
    // refused: nothing of this write landed
    await ports.appliedState.clearPending(state.key);
    state.earlier = undefined;
    return undefined;
  }
  const id = (answer as { id?: unknown } | undefined)?.id;
  const ownership = typeof id === 'string' ? ownershipOfWrite(state, id, true) : {};
  state.applied = await ports.appliedState.recordWrite(
    state.key,
    { secrets: written, definitionHash: diff.definitionHash, ...ownership, answer: providerAnswer('created') },
    state.applied ?? null,
  );
  return { outcome: 'created', new_revision: false };
}

/**
 * What the answer to a provider's write said, recorded with the write (src/core/kinds/ports.ts WrittenState): a
 * provider has no revision, so its outcome alone. Should the leader die before folding the job's result, the worker
 * that drops the job folds it from this (src/jobs/runner/unfolded-write.ts).
 */
function providerAnswer(outcome: WriteAnswer['outcome']): WriteAnswer {
  return { outcome, new_revision: false };
}

/**
 * The ownership a write records (the live provider's id, for prune): `created` by this write, or `adopted`; nothing new
 * when the record already names this id.
 */
function ownershipOfWrite(state: State, id: string, created: boolean): { ownership?: Ownership } {
  if (state.applied?.ownership?.id === id) return {};
  return { ownership: { origin: created ? 'created' : 'adopted', id } };
}

async function sendPatch(
  resource: ProviderResource,
  ports: SyncPorts,
  state: State,
  diff: ProviderDiff,
  request: Extract<NonNullable<ProviderDiff['request']>, { op: 'patch' }>,
): Promise<SyncResult> {
  const written = writtenSecrets(diff, state);
  const adopting = !state.applied;
  const refused = await ports.writeGate?.();
  if (refused) return refused;
  await ports.appliedState.setPending(state.key, {
    op: 'patch-provider',
    secrets: written,
    definitionHash: diff.definitionHash,
    sentAt: ports.now().toISOString(),
  });
  const body: PatchProviderRequest = { ...request.body };
  if (request.sendClientSecret) body.client_secret = (await state.secrets.values([CLIENT_SECRET]))[CLIENT_SECRET]!;
  // A PATCH is idempotent: should its answer be lost, the next attempt reads the provider and settles or resends it.
  const patched = await ports.service.patchProvider(resource.name, body);
  await ports.appliedState.recordWrite(
    state.key,
    {
      secrets: written,
      definitionHash: diff.definitionHash,
      ...ownershipOfWrite(state, patched.id, false),
      answer: providerAnswer(adopting ? 'adopted' : 'updated'),
    },
    state.applied ?? null,
  );
  const fields = diff.change.fields.map((field) => field.path).join(', ');
  if (adopting)
    return {
      outcome: 'adopted',
      new_revision: false,
      message: `created outside converge; converge took it over and updated ${fields}`,
    };
  return { outcome: 'updated', new_revision: false, message: `updated ${fields}` };
}

/**
 * Where the service cannot read providers: creates the provider (or has it discovered) unless the applied record shows
 * this definition was created. A 409 is converge's own write only when an earlier attempt sent the same definition and
 * lost its answer: then it is recorded as applied. Any other 409 is a provider converge has never seen: blocked.
 */
async function syncFromRecords(resource: ProviderResource, write: JobWrite, ports: SyncPorts): Promise<SyncResult> {
  const key = resourceKey('OAuthProvider', resource.name);
  const secrets = await ports.desiredSecrets(resource);
  const { applied, pending: earlier } = await ports.appliedState.read(key);
  const diff = diffProvider(resource, {
    secretHashes: secrets.hashes,
    secretErrors: secrets.errors,
    ...(applied ? { applied } : {}),
  });
  if (!diff.request && diff.change.action !== 'blocked') return { outcome: 'unchanged', new_revision: false };
  const broken = premiseBroken(write, diff, { key, secrets }, null);
  if (broken || !diff.request) return broken ?? { outcome: 'unchanged', new_revision: false };

  const written: Record<string, string> = {};
  if (diff.request.op === 'create' && diff.request.sendClientSecret && secrets.hashes[CLIENT_SECRET] !== undefined) {
    written[CLIENT_SECRET] = secrets.hashes[CLIENT_SECRET];
  }
  const sameWrite = earlier !== undefined && earlier.definitionHash === diff.definitionHash;
  const refused = await ports.writeGate?.();
  if (refused) return refused;
  await ports.appliedState.setPending(key, {
    op: diff.request.op === 'create' ? 'create-provider' : 'discover-provider',
    secrets: written,
    definitionHash: diff.definitionHash,
    sentAt: sameWrite ? earlier.sentAt : ports.now().toISOString(),
  });
  try {
    if (diff.request.op === 'create') {
      const body: CreateProviderRequest = { ...diff.request.body };
      if (diff.request.sendClientSecret) body.client_secret = (await secrets.values([CLIENT_SECRET]))[CLIENT_SECRET]!;
      await ports.service.createProvider(body);
    } else if (diff.request.op === 'discover') {
      await ports.service.discoverProvider(diff.request.body);
    }
  } catch (error) {
    if (!(error instanceof ServiceError) || error.status !== 409) throw error;
    if (!sameWrite) {
      await ports.appliedState.clearPending(key);
      throw new BlockedError(providerExistsReason(resource.name));
    }
    const answer = providerAnswer('adopted');
    await ports.appliedState.recordWrite(key, { secrets: written, definitionHash: diff.definitionHash, answer });
    return { outcome: 'adopted', new_revision: false, message: CREATE_ANSWER_LOST };
  }
  const answer = providerAnswer('created');
  await ports.appliedState.recordWrite(key, { secrets: written, definitionHash: diff.definitionHash, answer });
  return { outcome: 'created', new_revision: false, fields: diff.change.fields };
}
