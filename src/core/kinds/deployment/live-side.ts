// The Deployment kind's live side: the deployment listing, paired by name; unclaimed entries are orphans, reported owned or not.
import type { KindModule } from '../kind.js';

type LiveSide = Pick<KindModule, 'liveStamp' | 'liveContext' | 'orphans'>;

export const deploymentLiveSide = {
  liveStamp(name, view) {
    const deployment = view.deployments.get(name);
    if (!deployment) return null;
    return {
      id: deployment.id,
      updated_at: deployment.updated_at,
      latest_revision_id: deployment.latest_revision_id ?? null,
      active_revision_id: deployment.active_revision_id ?? null,
    };
  },
  // The diff reads the listing entry pairing found (src/plan/pairing.ts): nothing besides.
  liveContext() {
    return {};
  },
  // Pairing already left out every name a manifest (valid or blocked) of a listed kind claims.
  orphans(view) {
    return view.unclaimed.map((d) => ({
      kind: 'Deployment',
      name: d.name,
      id: d.id,
      status: d.status,
      reportUnowned: true,
    }));
  },
} satisfies LiveSide;
