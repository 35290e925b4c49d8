// A tenant's deployments in list order: the binary search into that order, and GET /v2/deployments' filters and paging.
import type { AnyDeploymentType } from './requests.js';
import { compareDeployments, type StoredDeployment } from './records.js';

/** The list filters of GET /v2/deployments, already parsed. */
export interface DeploymentFilter {
  name_contains?: string;
  status?: string;
  image_version?: string;
  deployment_type?: AnyDeploymentType;
  deployment_ids?: string[];
  remote_reconciled?: boolean;
  /** A deployment matches when it carries every one of these tag value ids. */
  tag_value_ids?: string[];
}

/** The index of `item` in `list` (list order), or where it would go. */
export function lowerBound(list: StoredDeployment[], item: StoredDeployment): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareDeployments(list[mid]!, item) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function matches(d: StoredDeployment, f: DeploymentFilter, nameNeedle: string | undefined): boolean {
  if (nameNeedle !== undefined && !d.name.includes(nameNeedle)) return false;
  if (f.status !== undefined && d.status !== f.status) return false;
  if (f.image_version !== undefined && d.image_version !== f.image_version) return false;
  if (f.deployment_type !== undefined && d.deployment_type !== f.deployment_type) return false;
  if (f.remote_reconciled !== undefined && d.remote_reconciled !== f.remote_reconciled) return false;
  if (f.tag_value_ids && f.tag_value_ids.length > 0 && !f.tag_value_ids.every((t) => d.tag_value_ids.includes(t)))
    return false;
  return true;
}

/** A revision is building or a deletion is due: the store advances it with time. */
export function isPending(d: StoredDeployment): boolean {
  return d.build_ready_at !== null || d.delete_at !== null;
}

/**
 * One page of the tenant's deployments matching `filter`, in list order. `ordered` is the tenant's list;
 * `byId` finds a deployment of any tenant (deployment_ids picks by id).
 */
export function pageOf(
  ordered: StoredDeployment[],
  byId: (id: string) => StoredDeployment | undefined,
  tenantId: string,
  filter: DeploymentFilter,
  offset: number,
  limit: number,
): StoredDeployment[] {
  const needle = filter.name_contains?.toLowerCase();
  if (filter.deployment_ids) {
    const picked = new Set<StoredDeployment>();
    for (const id of filter.deployment_ids) {
      const d = byId(id);
      if (d && d.tenant_id === tenantId && matches(d, filter, needle)) picked.add(d);
    }
    return [...picked].sort(compareDeployments).slice(offset, offset + limit);
  }
  const unfiltered =
    needle === undefined &&
    filter.status === undefined &&
    filter.image_version === undefined &&
    filter.deployment_type === undefined &&
    filter.remote_reconciled === undefined &&
    !(filter.tag_value_ids && filter.tag_value_ids.length > 0);
  if (unfiltered) return ordered.slice(offset, offset + limit);
  const out: StoredDeployment[] = [];
  let skipped = 0;
  for (const d of ordered) {
    if (!matches(d, filter, needle)) continue;
    if (skipped < offset) {
      skipped += 1;
      continue;
    }
    out.push(d);
    if (out.length >= limit) break;
  }
  return out;
}
