// Opens the service a command talks to: a URL, or "embedded": an in-process emulator seeded from a state file.
import { clientOptionsFrom, ServiceClient, type ClientOptions } from '../service/client.js';
import { UsageError } from '../core/errors.js';
import type { RunningEmulator } from '../emulator/server.js';
import type { Settings } from './settings.js';

export interface Target {
  client: ServiceClient;
  /** Base URL requests go to (the embedded emulator's loopback URL in embedded mode). */
  url: string;
  /** Set in embedded mode. */
  emulator?: RunningEmulator;
  close(): Promise<void>;
}

export const EMBEDDED = 'embedded';

/**
 * Embedded mode keeps the emulator's state in memory for the life of the process, seeded from
 * settings.emulatorState when given; nothing is written back to the seed file.
 */
export async function openTarget(settings: Settings, hooks: { onRequest?: ClientOptions['onRequest'] } = {}): Promise<Target> {
  if (settings.apiUrl === EMBEDDED) {
    // Imported here: a run against a real service loads none of the emulator.
    const [{ startEmulator }, { emulatorDiscoveryHook }] = await Promise.all([import('../emulator/server.js'), import('../emulator/discovery-hook.js')]);
    const emulator = await startEmulator({
      host: '127.0.0.1',
      port: 0,
      seedFile: settings.emulatorState,
      discover: emulatorDiscoveryHook({ allowLocal: settings.allowLocalDiscovery }),
      allowLocalDiscovery: settings.allowLocalDiscovery,
    });
    // The embedded emulator asks for no API key: only the URL and timeouts apply.
    const client = new ServiceClient(clientOptionsFrom({ apiUrl: emulator.url, requestTimeout: settings.requestTimeout }, hooks.onRequest));
    return {
      client,
      url: emulator.url,
      emulator,
      async close() {
        await client.close();
        await emulator.close();
      },
    };
  }
  let parsed: URL;
  try {
    parsed = new URL(settings.apiUrl);
  } catch {
    throw new UsageError(`api_url "${settings.apiUrl}" is not a URL; give http(s)://host[:port] or "${EMBEDDED}"`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    throw new UsageError(`api_url "${settings.apiUrl}" must use http or https`);
  }
  const client = new ServiceClient(clientOptionsFrom(settings, hooks.onRequest));
  return { client, url: settings.apiUrl, async close() { await client.close(); } };
}
