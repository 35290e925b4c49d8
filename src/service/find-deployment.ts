// The live deployment of one name, read by id or by the listing's name_contains filter: what a job's sync and the daemon's targeted reconcile read.
import type { ServicePort } from '../core/kinds/ports.js';
import type { LiveDeployment } from '../core/model.js';

/**
 * The live deployment of exactly this name, or undefined. By id when known (GET by id, or the list filtered by
 * deployment_ids on a service without it), else (or when that id is gone) by name_contains (a substring filter
 * that may match others, so the exact name is picked out). Paging stops at the match: a found deployment costs
 * one request, and only a missing one reads on to the empty page that ends the list.
 */
export async function findLiveDeployment(
  service: Pick<ServicePort, 'readDeployment' | 'listDeploymentPages'>,
  name: string,
  id?: string,
): Promise<LiveDeployment | undefined> {
  if (id) {
    const byId = await service.readDeployment(id);
    if (byId?.name === name) return byId;
  }
  for await (const page of service.listDeploymentPages({ name_contains: name })) {
    const hit = page.find((d) => d.name === name);
    if (hit) return hit;
  }
  return undefined;
}
