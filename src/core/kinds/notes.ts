// Fixed wording of plan reasons shared by the resource kinds.
import { formatLocation, type SourceLocation } from '../model.js';

export const SUSPENDED_NOTE = 'suspended by converge/suspend: shown, not applied';

/** `NAME (file:line:column)` when the loader recorded where the secret's source is written. */
export function withLocation(name: string, at: SourceLocation | undefined): string {
  return at ? `${name} (${formatLocation(at)})` : name;
}
