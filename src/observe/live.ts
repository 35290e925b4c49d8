// The live side of a plan, read from the service: one listing per kind that lists (deployments page by page; providers when a manifest or prune needs them).
import { declaresProviders, ownsAnyProvider } from '../core/kinds/index.js';
import { listedDeployment, type SharedText } from '../core/kinds/deployment/listed.js';
import type { DesiredResource, ListedDeployment, LiveProviders } from '../core/model.js';
import type { ServiceClient } from '../service/client.js';

/** List requests in flight while the live deployments are read (pages read ahead; see listDeploymentPages). */
export const LIST_PREFETCH = 4;

export interface DeploymentListing {
  /** Only deployments whose names start with it (the service is asked with name_contains, then names are filtered). */
  namePrefix?: string | undefined;
  /** Pages read ahead (default: none). */
  prefetch?: number;
  /** Stops after the page in hand once `requested` (the manifests could not be loaded: the listing is not needed). */
  stop?: { requested: boolean };
  /** Called with the number of live deployments listed so far (progress on a TTY). */
  onProgress?: (count: number) => void;
}

/**
 * Every live deployment (of the name prefix, when given), page by page: each page, checked whole by the wire schema, is
 * reduced as it arrives to what a plan reads of it (`listedDeployment`), so no decoded page outlives its turn.
 */
export async function listLiveDeployments(
  client: Pick<ServiceClient, 'listDeploymentPages'>,
  options: DeploymentListing = {},
): Promise<ListedDeployment[]> {
  const all: ListedDeployment[] = [];
  const text: SharedText = new Map();
  const prefix = options.namePrefix;
  const query = prefix === undefined ? {} : { name_contains: prefix };
  for await (const page of client.listDeploymentPages(query, options.prefetch ? { prefetch: options.prefetch } : {})) {
    if (options.stop?.requested) break;
    for (const item of page) {
      if (prefix === undefined || item.name.startsWith(prefix)) all.push(listedDeployment(item, text));
    }
    options.onProgress?.(all.length);
  }
  return all;
}

/**
 * The live providers, when the plan needs them: a manifest declares one, or prune is on and converge owns one (its
 * manifests may all be gone: `owned` reads the applied records' keys, called only then). Undefined otherwise: nothing
 * is asked.
 */
export async function listLiveProviders(
  client: Pick<ServiceClient, 'listProviders'>,
  declared: readonly DesiredResource[],
  prune: boolean,
  owned: () => Promise<Iterable<string>>,
): Promise<LiveProviders | undefined> {
  if (declaresProviders(declared)) return client.listProviders();
  if (prune && ownsAnyProvider(await owned())) return client.listProviders();
  return undefined;
}
