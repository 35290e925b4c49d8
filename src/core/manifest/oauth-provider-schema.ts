// The spec of an OAuthProvider manifest (docs/contracts.md §1): a manual provider's fields, or a discovered one's.
import { z } from 'zod';
import { ProviderType, TokenEndpointAuthMethod } from '../wire/schema.js';
import { ALWAYS, isRecord, SecretValueFrom } from './schema-parts.js';

/** Absolute http(s) URL (auth_url, token_url, mcp_server_url). */
export const HttpUrl = z
  .url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL, e.g. https://example.com/oauth/authorize' })
  .meta({ pattern: '^https?://' });

/** A manual provider's client secret: from env or file (or, with --allow-literal-secrets, a literal string). */
export const ClientSecret = z.union([
  z.string().meta({ description: 'Literal value: rejected unless --allow-literal-secrets (local use only).' }),
  z.strictObject({ valueFrom: SecretValueFrom }),
]);
export type ClientSecret = z.infer<typeof ClientSecret>;

/** Fields only a manual provider takes (a discovered one has name and mcp_server_url only). */
export const MANUAL_PROVIDER_FIELDS = [
  'client_id',
  'auth_url',
  'token_url',
  'client_secret',
  'uses_pkce',
  'code_challenge_method',
  'provider_type',
  'token_endpoint_auth_method',
  'authorization_params',
  'allowed_redirect_uris',
] as const;
const MANUAL_REQUIRED = ['client_id', 'auth_url', 'token_url'] as const;

export const OAuthProviderSpec = z
  .strictObject({
    name: z.string().min(1, { error: 'must not be empty' }).meta({ description: 'Display name of the provider.' }),
    client_id: z.string().min(1, { error: 'must not be empty' }).optional(),
    auth_url: HttpUrl.optional(),
    token_url: HttpUrl.optional(),
    client_secret: ClientSecret.optional(),
    uses_pkce: z.boolean().optional(),
    code_challenge_method: z.string().min(1, { error: 'must not be empty' }).optional(),
    provider_type: ProviderType.nullable().optional(),
    token_endpoint_auth_method: TokenEndpointAuthMethod.optional(),
    authorization_params: z.record(z.string(), z.unknown()).optional(),
    allowed_redirect_uris: z.array(z.string().min(1, { error: 'must not be empty' })).optional(),
    mcp_server_url: HttpUrl.optional().meta({
      description: 'Discovered provider: the MCP server whose OAuth metadata defines it.',
    }),
  })
  .superRefine((spec, ctx) => {
    if (!isRecord(spec)) return;
    const manual = MANUAL_PROVIDER_FIELDS.filter((field) => spec[field] !== undefined);
    if (spec.mcp_server_url !== undefined) {
      if (manual.length === 0) return;
      ctx.addIssue({
        code: 'custom',
        path: [manual[0]!],
        params: { at: 'key' },
        message: `cannot be combined with mcp_server_url: a discovered provider takes only name and mcp_server_url; remove ${manual.join(', ')}, or remove mcp_server_url to define the provider manually`,
      });
      return;
    }
    const missing = MANUAL_REQUIRED.filter((field) => spec[field] === undefined);
    if (missing.length === 0) return;
    ctx.addIssue({
      code: 'custom',
      path: [],
      params: { consequential: true },
      message: `missing required field${missing.length > 1 ? 's' : ''} ${missing.join(', ')} (a manual provider needs client_id, auth_url and token_url; a discovered one gives mcp_server_url instead)`,
    });
  }, ALWAYS)
  .meta({
    description: 'Manual (client_id, auth_url, token_url, ...) or discovered (name and mcp_server_url only).',
    oneOf: [
      { title: 'manual', required: ['name', ...MANUAL_REQUIRED], not: { required: ['mcp_server_url'] } },
      {
        title: 'discovered',
        required: ['name', 'mcp_server_url'],
        propertyNames: { enum: ['name', 'mcp_server_url'] },
      },
    ],
  });
export type OAuthProviderSpec = z.infer<typeof OAuthProviderSpec>;
