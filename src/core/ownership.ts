// Ownership: whether converge created or took over a live resource (from its applied record), and the adopt policy's rule.
import type { AppliedRecord, DesiredResource, ListedDeployment } from './model.js';
import { formatLocation } from './model.js';

/** adopt setting: `auto` takes over a live resource of a declared name at once; `explicit` needs converge/adopt: "true". */
export type AdoptPolicy = 'auto' | 'explicit';

/**
 * Whether converge owns the live resource of id `liveId`: `owned` when its record names that id, or is of an older
 * version that recorded no id (converge wrote to it then); `unowned` when there is no record, or the record names
 * another id (the resource converge owned is gone and another took its name).
 */
export function ownershipOf(record: AppliedRecord | undefined, liveId: string): 'owned' | 'unowned' {
  if (!record) return 'unowned';
  if (!record.ownership) return 'owned';
  return record.ownership.id === liveId ? 'owned' : 'unowned';
}

/** Why converge may not take over `live` (adopt: explicit without the annotation), or undefined when it may. */
export function adoptionBlocker(
  policy: AdoptPolicy | undefined,
  resource: DesiredResource,
  live: Pick<ListedDeployment, 'id'>,
): string | undefined {
  if (policy !== 'explicit' || resource.adopt) return undefined;
  return (
    `${resource.kind}/${resource.name} exists on the service (id ${live.id}) and converge did not create it; under adopt: explicit converge takes it over ` +
    `only when its manifest (${formatLocation(resource.location)}) carries the annotation converge/adopt: "true": add it, or give the manifest another metadata.name`
  );
}

/** The reason line of an adopt change. */
export function adoptReason(): string {
  return 'converge did not create this live resource; this first write takes it over';
}
