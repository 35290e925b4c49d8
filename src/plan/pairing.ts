// Pairs desired resources with live deployments by name in O(n) with Maps (gitops-engine style: pair first, then diff).
import { inListing } from '../core/kinds/index.js';
import type { BlockedResource, DesiredResource, ListedDeployment, ResourceKind } from '../core/model.js';
import { formatLocation, resourceKey } from '../core/model.js';

export interface BlockedPair {
  kind: ResourceKind;
  name: string;
  reasons: string[];
}

export interface Pairs {
  /** Each valid resource once, with the live deployment of its name when its kind is the one the service lists. */
  resources: Array<{ resource: DesiredResource; live: ListedDeployment | undefined }>;
  /** Invalid or colliding manifests, duplicates in the input, ambiguous live names: planned as blocked. */
  blocked: BlockedPair[];
  /** Live deployments named in no manifest, valid or blocked. */
  orphans: ListedDeployment[];
}

/** Live deployments by name; the same id listed twice (pages shifting under the listing) counts once. */
function liveByName(live: readonly ListedDeployment[]): Map<string, ListedDeployment[]> {
  const seen = new Set<string>();
  const byName = new Map<string, ListedDeployment[]>();
  for (const deployment of live) {
    if (seen.has(deployment.id)) continue;
    seen.add(deployment.id);
    const list = byName.get(deployment.name);
    if (list) list.push(deployment);
    else byName.set(deployment.name, [deployment]);
  }
  return byName;
}

export function pair(
  resources: readonly DesiredResource[],
  blocked: readonly BlockedResource[],
  live: readonly ListedDeployment[],
): Pairs {
  const byName = liveByName(live);
  const blockedByKey = new Map<string, BlockedPair>();
  for (const entry of blocked) {
    const key = resourceKey(entry.kind, entry.name);
    const found = blockedByKey.get(key);
    if (!found) blockedByKey.set(key, { kind: entry.kind, name: entry.name, reasons: [entry.reason] });
    else if (!found.reasons.includes(entry.reason)) found.reasons.push(entry.reason);
  }
  const declared = new Map<string, DesiredResource[]>();
  for (const resource of resources) {
    const key = resourceKey(resource.kind, resource.name);
    const list = declared.get(key);
    if (list) list.push(resource);
    else declared.set(key, [resource]);
  }

  const pairs: Pairs = { resources: [], blocked: [], orphans: [] };
  const claimed = new Set<string>();
  for (const [key, list] of declared) {
    const first = list[0]!;
    const listed = inListing(first.kind);
    if (listed) claimed.add(first.name);
    if (blockedByKey.has(key)) continue;
    if (list.length > 1) {
      const places = list.map((resource) => formatLocation(resource.location)).join(', ');
      pairs.blocked.push({
        kind: first.kind,
        name: first.name,
        reasons: [`${key} is declared ${list.length} times (${places}); keep one`],
      });
      continue;
    }
    if (!listed) {
      pairs.resources.push({ resource: first, live: undefined });
      continue;
    }
    const matches = byName.get(first.name) ?? [];
    if (matches.length > 1) {
      const ids = matches.map((m) => m.id).join(', ');
      pairs.blocked.push({
        kind: first.kind,
        name: first.name,
        reasons: [
          `the service lists ${matches.length} deployments named ${first.name} (ids ${ids}); converge cannot tell which one to manage`,
        ],
      });
      continue;
    }
    pairs.resources.push({ resource: first, live: matches[0] });
  }
  for (const entry of blockedByKey.values()) {
    if (inListing(entry.kind)) claimed.add(entry.name);
    pairs.blocked.push(entry);
  }
  for (const [name, list] of byName) {
    if (!claimed.has(name)) pairs.orphans.push(...list);
  }
  return pairs;
}
