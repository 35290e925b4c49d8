// The events converge notifies people of (docs/notifications.md): their types, their shape and their delivery id.
import { createHash } from 'node:crypto';
import type { ManifestVersion } from '../manifest-version.js';

/** Every event type a receiver may ask for; `events:` defaults to all of them (write_sent only to commit-status). */
export const NOTIFY_EVENT_TYPES = [
  'rollout_succeeded',
  'rollout_failed',
  'drift_detected',
  'drift_healed',
  'conflict',
  'held',
  'applied_state_lost',
  'pruned',
  'delete_pending',
  'write_failed',
  'write_sent',
] as const;
export type NotifyEventType = (typeof NOTIFY_EVENT_TYPES)[number];

/** The type of the test event `converge notify test` sends (never derived from the event log). */
export const TEST_EVENT_TYPE = 'test';

/** What an event is about: a managed resource, or the daemon itself (applied_state_lost). */
export interface EventResource {
  kind: string;
  name: string;
}

/** The kind named by daemon-wide events (they pass every receiver's `resources:` filter). */
export const DAEMON_RESOURCE_KIND = 'Daemon';

/** One event: a transition the event log recorded (src/core/notify/log-events.ts derives them). Holds no secret. */
export interface NotifyEvent {
  /** The delivery id: the same for the same resource, type and occurrence (revision, job, hold, log entry) on every replica and retry. */
  id: string;
  type: NotifyEventType | typeof TEST_EVENT_TYPE;
  resource: EventResource;
  /** A stable reason code (RevisionBuildFailed, DriftReported, SecretsUnknown, JobFailed, ...). */
  reason: string;
  /** One line for people. */
  message: string;
  /** The revision the event is about (rollouts). */
  revisionId?: string;
  /** The service's status of that revision (BUILD_FAILED, DEPLOYED, ...). */
  revisionStatus?: string;
  /** The live deployment's id (to read build logs of a failed revision). */
  deploymentId?: string;
  /** The manifests the desired state was read from: a git commit or a content hash; null when not known. */
  manifestVersion: Pick<ManifestVersion, 'kind' | 'id' | 'uncommitted'> | null;
  /** write_sent: whether the write started a rollout (a commit status stays pending until it ends). */
  rollout?: boolean;
  /** When the transition was recorded (ISO time). */
  time: string;
}

/** The delivery id of an event: a short sha256 of the resource, the type and what tells one occurrence from another. */
export function eventId(resource: EventResource, type: string, occurrence: string): string {
  const digest = createHash('sha256')
    .update(`converge-event/v1\0${resource.kind}\0${resource.name}\0${type}\0${occurrence}`)
    .digest('hex');
  return `evt-${digest.slice(0, 32)}`;
}

/** The BullMQ job id of one event's delivery to one receiver (no colon: BullMQ refuses it in custom ids). */
export function deliveryJobId(event: Pick<NotifyEvent, 'id'>, receiver: string): string {
  const digest = createHash('sha256').update(`${event.id}\0${receiver}`).digest('hex');
  return `${event.id}-${digest.slice(0, 12)}`;
}

/** Optional last build log lines of a failed revision, read at delivery time (the service may not have them). */
export type BuildLogReader = (deploymentId: string, revisionId: string) => Promise<string[] | undefined>;

/**
 * What one delivery attempt to one receiver came to. `retry`: the receiver failed or did not answer in time (5xx,
 * 408, 429, a timeout, a refused connection): tried again with backoff. `rejected`: it refused for good (another 4xx).
 * `skipped`: nothing to send (a commit status without a git commit, a receiver not configured here).
 * `detail` names the receiver's answer (its status, or the network error's code), never its URL or a token.
 */
export type DeliveryAnswer =
  | { outcome: 'delivered'; status: number }
  | { outcome: 'retry'; detail: string }
  | { outcome: 'rejected'; detail: string }
  | { outcome: 'skipped'; detail: string };

/** Sends one event to the receiver named `receiver` (the sender alone holds its URL and secrets). */
export type Deliver = (receiver: string, event: NotifyEvent) => Promise<DeliveryAnswer>;

/** Deliveries counted by converge_notifications_total{result} (dropped: never queued, Redis did not take them). */
export type DeliveryResult = 'delivered' | 'retried' | 'failed' | 'rejected' | 'skipped' | 'dropped';
