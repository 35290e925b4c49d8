// The service URL a command needs, checked from the settings alone (no HTTP client loaded: `converge run` checks it before it binds its port).
import { UsageError } from '../core/errors.js';
import type { Settings } from './settings.js';

/** Settings with the service URL known: what a command that talks to the service works with. */
export type ServiceSettings = Settings & { apiUrl: string };

/** The message of a command that needs the service and has no URL: one line naming every way to give one. */
const NO_API_URL =
  'no service URL: give --api-url https://HOST or set CONVERGE_API_URL (--api-url embedded runs a throwaway in-process emulator)';

/** The settings of a command that needs the service; without api_url, a UsageError naming how to give it. */
export function requireApiUrl(settings: Settings): ServiceSettings {
  const { apiUrl } = settings;
  if (apiUrl === undefined) throw new UsageError(NO_API_URL);
  return { ...settings, apiUrl };
}
