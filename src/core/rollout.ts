// Following a rollout, the pure half: what one poll read of a followed resource becomes its health, through its kind's health() (the poll is src/observe/rollouts.ts).
import type { HealthCondition } from './health.js';
import type { ResourceHold } from './holds.js';
import { kindOf, type RevisionReading } from './kinds/index.js';
import type { ListedDeployment, ResourceKind } from './model.js';

/** A rollout to follow: the resource, its live id, and its latest revision when known (then that revision is read). */
export interface RolloutTarget {
  key: string;
  kind: ResourceKind;
  deploymentId: string;
  revisionId: string | undefined;
}

/**
 * What one poll read of a followed rollout: its latest revision (GET …/revisions/{id}, the service's word on a build),
 * or, where that cannot be read, the resource as the service lists it.
 */
export type RolloutReading = { revision: RevisionReading } | { live: ListedDeployment };

/** What the health of a followed rollout reads besides the poll: the resource's hold, and the progress deadline's clock. */
export interface FollowedContext {
  hold?: ResourceHold | undefined;
  now: number;
  /** Since when the follower knows the rollout builds (ms; undefined: not known). */
  since: number | undefined;
  deadlineMs: number;
}

/** The revision a reading is about: the one read, else the listing's latest (null: the resource has none). */
export function readingRevision(reading: RolloutReading): string | null {
  return 'revision' in reading ? reading.revision.id : (reading.live.latest_revision_id ?? null);
}

/**
 * The health of a followed rollout after one poll: its kind's health() of what was read (src/core/kinds), with the
 * resource's hold and the progress deadline, as a plan or a reconcile would tell it from the same reading.
 */
export function followedHealth(
  target: Pick<RolloutTarget, 'kind'>,
  reading: RolloutReading,
  context: FollowedContext,
): HealthCondition {
  return kindOf(target.kind).health({
    live: 'live' in reading ? reading.live : undefined,
    revision: 'revision' in reading ? reading.revision : undefined,
    hold: context.hold,
    clock: { now: context.now, since: context.since, deadlineMs: context.deadlineMs },
  });
}
