// The OAuthProvider kind: read and updated where the service can (beyond the spec), else created once and known by its definition hash.
import type { ProviderResource } from '../../model.js';
import { fingerprintOf, type KindModule } from '../kind.js';
import { CLIENT_SECRET, diffProvider } from './diff.js';
import { exportProviders } from './export.js';
import { providerFromJob, providerJobPayload, ProviderJobPayload } from './job.js';
import { providerLiveSide } from './live-side.js';
import { providerManifest } from './manifest.js';

export { diffProvider, providerDefinitionHash, type ProviderContext, type ProviderDiff } from './diff.js';

const OPERATIONS = ['create-provider', 'discover-provider', 'update-provider', 'delete-provider'] as const;

export const oauthProviderKind = {
  kind: 'OAuthProvider',
  listed: false,
  rollout: false,
  adoptNote: false,
  exportFolder: 'providers',
  noun: { one: 'OAuth provider', many: 'OAuth providers' },
  // A provider has no rollout: in force once written; one planned for create is not there yet.
  health({ action }) {
    return action === 'create'
      ? { status: 'unknown', reason: 'AwaitingCreate', message: 'not created yet' }
      : {
          status: 'healthy',
          reason: 'NoRollout',
          message: 'an OAuthProvider has no rollout: it is in force once written',
        };
  },
  revisionToRead() {
    return undefined;
  },
  // Providers are not paired with the deployment listing: their live side comes through PlanContext.provider.
  diff(resource, _live, context) {
    return diffProvider(resource, context).change;
  },
  fingerprint(resource, secretHashes) {
    if (resource.spec.mode !== 'manual') return fingerprintOf(resource, resource.spec, secretHashes);
    const { client_secret, ...others } = resource.spec;
    return fingerprintOf(resource, { ...others, client_secret: client_secret !== undefined }, secretHashes);
  },
  secretSources(resource) {
    const spec = resource.spec;
    return spec.mode === 'manual' && spec.client_secret !== undefined
      ? [{ name: CLIENT_SECRET, from: spec.client_secret }]
      : [];
  },
  jobSchema: ProviderJobPayload,
  operations: OPERATIONS,
  operation(resource, action) {
    if (action === 'update') return 'update-provider';
    return resource.spec.mode === 'mcp' ? 'discover-provider' : 'create-provider';
  },
  jobPayload: providerJobPayload,
  fromJobPayload: providerFromJob,
  manifest: providerManifest,
  ...providerLiveSide,
  exportLive: exportProviders,
} satisfies KindModule<ProviderResource, typeof ProviderJobPayload, (typeof OPERATIONS)[number]>;
