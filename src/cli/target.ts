// Opens the service a command talks to: a URL, or "embedded": an in-process emulator seeded from a state file.
import { clientOptionsFrom, ServiceClient, type ClientOptions } from '../service/client.js';
import { API_KEY_ADVICE, formatSeconds, type RetryInfo } from '../service/transport.js';
import { checkHttpUrl } from '../core/http-url.js';
import type { RunningEmulator } from '../emulator/server.js';
import type { ServiceSettings } from './api-url.js';

export interface Target {
  client: ServiceClient;
  /** Base URL requests go to (the embedded emulator's loopback URL in embedded mode). */
  url: string;
  /** Set in embedded mode. */
  emulator?: RunningEmulator;
  close(): Promise<void>;
  /** Drops the client's connections now: its requests in flight fail (the daemon's stop). */
  dropConnections(): Promise<void>;
}

export const EMBEDDED = 'embedded';

// Checked without loading the HTTP client (src/cli/api-url.ts); commands that open the service import it from here.
export { requireApiUrl, type ServiceSettings } from './api-url.js';

/** The first line `apply` and `run` print against the embedded emulator: nothing they do reaches a real service. */
export const EMBEDDED_BANNER =
  'using the embedded emulator (--api-url embedded): nothing is written to a real service, and its state is gone when this process exits';

/**
 * Embedded mode keeps the emulator's state in memory for the life of the process, seeded from
 * settings.emulatorState when given; nothing is written back to the seed file.
 */
/** "GET /v2/deployments: no answer in 30s, retrying (2/5) in 4s": one line on stderr per retry of a read. */
export function retryLine(info: RetryInfo): string {
  return `${info.method} ${info.route}: ${info.why}, retrying (${info.attempt}/${info.attempts}) in ${formatSeconds(info.waitMs)}`;
}

export async function openTarget(
  settings: ServiceSettings,
  hooks: { onRequest?: ClientOptions['onRequest']; onRetry?: ClientOptions['onRetry'] } = {},
): Promise<Target> {
  if (settings.apiUrl === EMBEDDED) {
    // Imported here: a run against a real service loads none of the emulator.
    const [{ startEmulator }, { emulatorDiscoveryHook }] = await Promise.all([
      import('../emulator/server.js'),
      import('../emulator/discovery-hook.js'),
    ]);
    const emulator = await startEmulator({
      host: '127.0.0.1',
      port: 0,
      seedFile: settings.emulatorState,
      discover: emulatorDiscoveryHook({ allowLocal: settings.allowLocalDiscovery }),
      allowLocalDiscovery: settings.allowLocalDiscovery,
    });
    // The embedded emulator asks for no API key: only the URL and timeouts apply.
    const client = new ServiceClient(
      clientOptionsFrom(
        { apiUrl: emulator.url, requestTimeout: settings.requestTimeout },
        hooks.onRequest,
        hooks.onRetry,
      ),
    );
    return {
      client,
      url: emulator.url,
      emulator,
      async close() {
        await client.close();
        await emulator.close();
      },
      dropConnections: () => client.destroy(),
    };
  }
  checkHttpUrl(settings.apiUrl, {
    name: 'api_url',
    example: `http(s)://host[:port] or "${EMBEDDED}"`,
    noCredentials: API_KEY_ADVICE,
  });
  const client = new ServiceClient(clientOptionsFrom(settings, hooks.onRequest, hooks.onRetry));
  return {
    client,
    url: settings.apiUrl,
    async close() {
      await client.close();
    },
    dropConnections: () => client.destroy(),
  };
}
