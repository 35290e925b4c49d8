// The MCP SDK's discovery functions, imported on first use: most commands never discover, and the SDK takes ~200 ms to load.
import type * as ClientAuth from '@modelcontextprotocol/sdk/client/auth.js';
import type * as AuthUtils from '@modelcontextprotocol/sdk/shared/auth-utils.js';

export interface McpSdk {
  buildDiscoveryUrls: typeof ClientAuth.buildDiscoveryUrls;
  discoverAuthorizationServerMetadata: typeof ClientAuth.discoverAuthorizationServerMetadata;
  discoverOAuthProtectedResourceMetadata: typeof ClientAuth.discoverOAuthProtectedResourceMetadata;
  extractWWWAuthenticateParams: typeof ClientAuth.extractWWWAuthenticateParams;
  registerClient: typeof ClientAuth.registerClient;
  checkResourceAllowed: typeof AuthUtils.checkResourceAllowed;
  resourceUrlFromServerUrl: typeof AuthUtils.resourceUrlFromServerUrl;
  LATEST_PROTOCOL_VERSION: string;
}

let loading: Promise<McpSdk> | undefined;

/** Loads the SDK's modules once per process. */
export function loadMcpSdk(): Promise<McpSdk> {
  loading ??= Promise.all([
    import('@modelcontextprotocol/sdk/client/auth.js'),
    import('@modelcontextprotocol/sdk/shared/auth-utils.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]).then(([auth, utils, types]) => ({
    buildDiscoveryUrls: auth.buildDiscoveryUrls,
    discoverAuthorizationServerMetadata: auth.discoverAuthorizationServerMetadata,
    discoverOAuthProtectedResourceMetadata: auth.discoverOAuthProtectedResourceMetadata,
    extractWWWAuthenticateParams: auth.extractWWWAuthenticateParams,
    registerClient: auth.registerClient,
    checkResourceAllowed: utils.checkResourceAllowed,
    resourceUrlFromServerUrl: utils.resourceUrlFromServerUrl,
    LATEST_PROTOCOL_VERSION: types.LATEST_PROTOCOL_VERSION,
  }));
  return loading;
}
