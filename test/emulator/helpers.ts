// Shared helpers of the emulator tests: a small seed with fixed ids, and a JSON client over real HTTP.
import {
  startEmulator,
  type EmulatorOptions,
  type EmulatorSeed,
  type RunningEmulator,
} from '../../src/emulator/server.js';

export const TENANT = '11111111-1111-4111-8111-111111111111';
export const OTHER_TENANT = '22222222-2222-4222-8222-222222222222';
export const ORG = '33333333-3333-4333-8333-333333333333';
export const ACME = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa';
export const LABS = 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb';
export const SUPPORT_URL = 'https://codehost.example.com/acme/support-agent';
export const BILLING_URL = 'https://codehost.example.com/acme/billing-bot';
export const RESEARCH_URL = 'https://codehost.example.com/acme-labs/research-agent';

export function baseSeed(): EmulatorSeed {
  return {
    organization_id: ORG,
    tenants: [
      { id: TENANT, name: 'acme-prod' },
      { id: OTHER_TENANT, name: 'acme-staging' },
    ],
    integrations: [
      {
        id: ACME,
        installation_id: 101,
        name: 'acme',
        repositories: [
          { id: 1, name: 'support-agent', default_branch: 'main' },
          { id: 2, name: 'billing-bot', default_branch: 'trunk' },
        ],
      },
      { id: LABS, installation_id: 202, name: 'acme-labs', repositories: [{ id: 3, name: 'research-agent' }] },
    ],
    tracing_projects: [{ name: 'taken-by-tracing' }],
  };
}

export interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

export interface Client {
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer>;
  raw(
    method: string,
    path: string,
    body: string | Uint8Array | undefined,
    headers?: Record<string, string>,
  ): Promise<Answer>;
}

export function client(emulator: RunningEmulator, defaults: Record<string, string> = {}): Client {
  async function raw(
    method: string,
    path: string,
    body: string | Uint8Array | undefined,
    headers: Record<string, string> = {},
  ): Promise<Answer> {
    const res = await fetch(`${emulator.url}${path}`, { method, body, headers: { ...defaults, ...headers } });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) };
  }
  return {
    raw,
    call(method, path, body, headers = {}) {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      return raw(method, path, payload, {
        ...(payload !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      });
    },
  };
}

/** Starts an emulator with the base seed (unless one is given); the caller closes it. */
export async function start(options: EmulatorOptions = {}): Promise<{ emulator: RunningEmulator; api: Client }> {
  const emulator = await startEmulator({ seed: baseSeed(), buildMs: 0, ...options });
  return { emulator, api: client(emulator) };
}

export function codehostBody(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    source: 'codehost',
    source_config: { integration_id: ACME, repo_url: SUPPORT_URL },
    source_revision_config: { repo_ref: 'main', graph_config_path: 'langgraph.json' },
    secrets: [],
    ...extra,
  };
}

export function dockerBody(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    source: 'external_docker',
    source_config: {},
    source_revision_config: { image_uri: 'registry.example.com/acme/app:1.0.0' },
    secrets: [],
    ...extra,
  };
}

export function templateBody(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name, source: 'internal_template', source_config: {}, source_revision_config: {}, secrets: [], ...extra };
}

/** A clock tests move by hand: `now()` is the emulator's clock, `advance(ms)` moves it. */
export function manualClock(start = Date.UTC(2025, 6, 1, 12)): { now: () => number; advance: (ms: number) => void } {
  let at = start;
  return {
    now: () => at,
    advance: (ms) => {
      at += ms;
    },
  };
}

export { until } from '../helpers/until.js';
