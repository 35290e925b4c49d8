// The JSON contract's legacy fields of a resource's state (`state`, `syncReason` of a /status row), derived from its conditions in this one place.
import type { HealthCondition, SyncCondition } from './health.js';

/** What the legacy fields read of a resource's state (src/core/resource-state.ts): its two conditions. */
type Conditions = { sync: SyncCondition; health: HealthCondition };

/** The legacy one-word states of a resource (`state` of a /status row; converge_resources counts by it). */
export const SYNC_STATES = ['synced', 'out_of_sync', 'progressing', 'failed', 'suspended', 'blocked'] as const;
export type SyncState = (typeof SYNC_STATES)[number];

/** The legacy one-word state, from sync first, then health (docs/daemon.md: `failed` when degraded). */
export function legacyState(state: Conditions): SyncState {
  if (state.sync.status === 'blocked') return 'blocked';
  if (state.sync.status === 'suspended') return 'suspended';
  if (state.health.status === 'degraded' || state.sync.reason === 'JobFailed') return 'failed';
  if (state.sync.reason === 'Applying') return 'progressing';
  if (state.sync.status === 'synced') return state.health.status === 'progressing' ? 'progressing' : 'synced';
  return 'out_of_sync';
}

/** The fields kept only for the JSON contract, derived from the conditions in this one place. */
export interface LegacyFields {
  /** One word mixing sync and rollout (see `sync` and `health`). */
  state: SyncState;
  /** SecretsUnknown or Conflict: why an out_of_sync resource is not written (the same as `sync.reason`). */
  syncReason?: 'SecretsUnknown' | 'Conflict';
}

export function legacyFields(state: Conditions): LegacyFields {
  const reason = state.sync.reason;
  return {
    state: legacyState(state),
    ...(reason === 'SecretsUnknown' || reason === 'Conflict' ? { syncReason: reason } : {}),
  };
}
