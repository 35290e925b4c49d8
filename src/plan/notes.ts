// Fixed wording of plan reasons shared by the per-kind planners.
import { formatLocation, type SourceLocation } from '../core/model.js';

export const SUSPENDED_NOTE = 'suspended by converge/suspend: shown, not applied';

export const ORPHAN_REASON = 'live deployment not in any manifest; converge never deletes';

/** `NAME (file:line:column)` when the loader recorded where the secret's source is written. */
export function withLocation(name: string, at: SourceLocation | undefined): string {
  return at ? `${name} (${formatLocation(at)})` : name;
}
