// Changes diffed ahead of plan() (while other files still compile), each kept with what it was diffed against.
import { kindOf, type PlanContext } from '../core/kinds/index.js';
import type { DesiredResource, ListedDeployment, PlanChange } from '../core/model.js';

/** One resource's change, and the live deployment and context it was diffed against. */
interface PreparedChange {
  live: ListedDeployment | undefined;
  context: PlanContext;
  change: PlanChange;
}

/**
 * Changes worked out before plan() runs (src/observe/plan-ahead.ts diffs each resource as its file's compile
 * finishes). plan() takes one only where it would diff the same resource object against the same live deployment and
 * the same context (each of its fields the same value): anything else is diffed again, so the plan is what diffing
 * everything in plan() gives. Each is taken once (plan() marks waves on its changes).
 */
export class PreparedChanges {
  private readonly changes = new Map<DesiredResource, PreparedChange>();

  get size(): number {
    return this.changes.size;
  }

  /** Diffs `resource` against `live` through its kind, now, and keeps the change with what it was diffed against. */
  prepare(resource: DesiredResource, live: ListedDeployment | undefined, context: PlanContext): void {
    this.changes.set(resource, { live, context, change: kindOf(resource.kind).diff(resource, live, context) });
  }

  /** The change prepared for `resource` when it was diffed against this live deployment and context; else undefined. */
  take(resource: DesiredResource, live: ListedDeployment | undefined, context: PlanContext): PlanChange | undefined {
    const prepared = this.changes.get(resource);
    if (!prepared) return undefined;
    this.changes.delete(resource);
    return prepared.live === live && sameContext(prepared.context, context) ? prepared.change : undefined;
  }
}

/** The same fields, each the same value (the same object: the plan's input hands the ones the preparation read). */
function sameContext(a: PlanContext, b: PlanContext): boolean {
  const keys = Object.keys(a) as Array<keyof PlanContext>;
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => key in b && a[key] === b[key]);
}
