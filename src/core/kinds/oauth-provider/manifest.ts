// The OAuthProvider kind in the manifest format: a string client_secret is a literal secret; no key hints, no warnings.
import type { ManifestHooks } from '../kind.js';

export const providerManifest = {
  literalSecrets(data) {
    const spec = data.spec as Record<string, unknown> | undefined;
    if (!spec || typeof spec !== 'object' || typeof spec.client_secret !== 'string') return [];
    return [
      {
        path: ['spec', 'client_secret'],
        message: `client_secret has a literal value in the manifest; write client_secret: { valueFrom: { env: NAME } } or { valueFrom: { file: PATH } } (or --allow-literal-secrets for local use only)`,
      },
    ];
  },
  keyHint() {
    return undefined;
  },
  warnings() {
    return [];
  },
  createWarnings() {
    return [];
  },
} satisfies ManifestHooks;
