// The MCP discovery hook of mcp-discover, and the emulator's fallback when no hook is plugged in: a guarded reachability probe.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { ConvergeError } from '../core/errors.js';
import type { ProviderType } from '../core/wire/schema.js';
import { classifyAddress } from '../discovery/address.js';

/**
 * What MCP discovery yields for a provider (src/discovery produces it; extra fields are ignored).
 * `client_id` null means no client was registered: mcp-discover then answers 422.
 */
export interface ProviderFromDiscovery {
  auth_url: string;
  token_url: string;
  client_id: string | null;
  /** From dynamic client registration; the emulator keeps only its sha256. */
  client_secret?: string | null;
  uses_pkce: boolean;
  code_challenge_method?: string | null;
  /** One of none, client_secret_basic, client_secret_post; null or absent: client_secret_post. */
  token_endpoint_auth_method?: string | null;
  is_dynamic_client: boolean;
  provider_type?: ProviderType | null;
  authorization_params?: Record<string, unknown>;
  allowed_redirect_uris?: string[];
}

/**
 * Discovers a provider from an MCP server's address. To fail, throw an Error whose message says which
 * step failed and why: mcp-discover answers 422 with one item (loc body.mcp_server_url) holding it; or
 * give the error a `detail` array of {loc, msg, type} items, answered as the 422's detail as they are.
 */
export type DiscoverHook = (mcpServerUrl: string) => Promise<ProviderFromDiscovery>;

/** A discovery failure of the fallback probe; its message becomes the 422's msg. */
export class DiscoveryProbeError extends ConvergeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('E_EMULATOR_DISCOVERY', message, options);
  }
}

const PROBE_TIMEOUT_MS = 3000;

/**
 * Why an address may not be fetched, or null when it may: the address classes of MCP discovery
 * (src/discovery/address.ts). Link-local and cloud metadata addresses are never allowed.
 */
export function refusedAddress(address: string, allowLocal: boolean): string | null {
  const kind = classifyAddress(address);
  if (kind === 'link-local') return `${address} is a link-local address, which is never fetched`;
  if (kind === 'local' && !allowLocal) {
    return `${address} is a loopback or private address; allow it with --allow-local-discovery`;
  }
  return null;
}

/**
 * The fallback of mcp-discover without a discovery hook: checks the URL is fetchable under the same rules
 * as discovery (https only, public addresses, unless local discovery is allowed; never link-local), makes
 * one GET with a short timeout, and reports the honest outcome. It always throws: unreachable, or
 * reachable but without discovery in this build.
 */
export function probeOnlyDiscovery(options: { allowLocal: boolean; timeoutMs?: number }): DiscoverHook {
  return async (mcpServerUrl) => {
    let url: URL;
    try {
      url = new URL(mcpServerUrl);
    } catch {
      throw new DiscoveryProbeError(`"${mcpServerUrl}" is not a valid URL`);
    }
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && options.allowLocal)) {
      throw new DiscoveryProbeError(
        `only https URLs are fetched (got ${url.protocol}); http needs --allow-local-discovery`,
      );
    }
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host)) {
      const refused = refusedAddress(host, options.allowLocal);
      if (refused) throw new DiscoveryProbeError(`MCP server unreachable: ${refused}`);
    }
    const status = await probe(url, options.allowLocal, options.timeoutMs ?? PROBE_TIMEOUT_MS);
    throw new DiscoveryProbeError(
      `MCP server answered HTTP ${status}, but MCP OAuth discovery is not available in this emulator build (no discovery hook configured)`,
    );
  };
}

function probe(url: URL, allowLocal: boolean, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const guardedLookup = (
      hostname: string,
      opts: object,
      callback: (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
    ): void => {
      dnsLookup(hostname, { ...opts, all: true }, (error, addresses) => {
        if (error) return callback(error, []);
        for (const a of addresses) {
          const refused = refusedAddress(a.address, allowLocal);
          if (refused)
            return callback(
              Object.assign(new Error(`${hostname} resolves to ${refused}`), { code: 'EREFUSED_ADDRESS' }),
              [],
            );
        }
        if ((opts as { all?: boolean }).all) return callback(null, addresses);
        callback(null, addresses[0]!.address, addresses[0]!.family);
      });
    };
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = request(
      url,
      { method: 'GET', lookup: guardedLookup, headers: { accept: 'application/json, text/event-stream' } },
      (res) => {
        resolve(res.statusCode ?? 0);
        res.destroy();
      },
    );
    req.setTimeout(timeoutMs, () =>
      req.destroy(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' })),
    );
    req.on('error', (error: NodeJS.ErrnoException) => {
      reject(
        new DiscoveryProbeError(
          `MCP server unreachable: ${error.code === 'EREFUSED_ADDRESS' || error.code === 'ETIMEDOUT' ? error.message : `${error.code ?? 'error'}: ${error.message}`}`,
        ),
      );
    });
    req.end();
  });
}
