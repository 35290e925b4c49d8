// The OAuthProvider kind's live side: the provider listing (when the service has one), by provider_id; only owned orphans are planned.
import { resourceKey } from '../../model.js';
import type { KindModule } from '../kind.js';

type LiveSide = Pick<KindModule, 'liveStamp' | 'liveContext' | 'orphans'>;

export const providerLiveSide = {
  liveStamp(name, view) {
    const provider = view.providers?.get(name);
    return provider
      ? { id: provider.id, updated_at: provider.updated_at, latest_revision_id: null, active_revision_id: null }
      : null;
  },
  // Listed: the live provider of this provider_id, or none. Not listed: the applied record is all the diff knows.
  liveContext(name, view) {
    return view.providers ? { provider: { live: view.providers.get(name) } } : {};
  },
  orphans(view, declared) {
    if (!view.providers) return [];
    return [...view.providers.values()]
      .filter((p) => !declared.has(resourceKey('OAuthProvider', p.provider_id)))
      .map((p) => ({ kind: 'OAuthProvider', name: p.provider_id, id: p.id, reportUnowned: false }));
  },
} satisfies LiveSide;
