// The settings table against config/default.yaml and the settings table of docs/settings.md, and how a setting is resolved.
import { mkdtempSync, rmSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG_PATH, resolveSettings, settingOptions } from '../../src/cli/settings.js';
import { SETTING_NAMES, settingSource } from '../../src/cli/setting-table.js';

const SETTINGS_DOC = fileURLToPath(new URL('../../docs/settings.md', import.meta.url));

/** The rows of the settings table of docs/settings.md: flag, environment, config key, default, meaning. */
function readmeRows(): string[][] {
  const table = readFileSync(SETTINGS_DOC, 'utf8');
  return table
    .split('\n')
    .filter((line) => line.startsWith('| `--'))
    .map((line) =>
      line.split(' | ').map((cell) =>
        cell
          .replace(/^\| /, '')
          .replace(/ \|$/, '')
          .replace(/^`(.*)`$/, '$1'),
      ),
    );
}

function defaults(): Record<string, unknown> {
  return parseYaml(readFileSync(DEFAULT_CONFIG_PATH, 'utf8')) as Record<string, unknown>;
}

function resolve(values: Record<string, string | boolean> = {}, env: NodeJS.ProcessEnv = {}) {
  return resolveSettings({ positionals: [], values }, env);
}

/** Temporary directories of this file's tests, removed after each test. */
const scratch: string[] = [];
afterEach(() => {
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function scratchDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'converge-settings-'));
  scratch.push(dir);
  return dir;
}

describe('the settings table', () => {
  it('has exactly the settings of config/default.yaml', () => {
    const keys = SETTING_NAMES.map((name) => settingSource(name).key);
    // notifications and windows are lists read on their own (src/core/notify/receivers.ts, src/core/windows-config.ts),
    // not settings with a flag.
    expect(
      Object.keys(defaults())
        .filter((key) => key !== 'notifications' && key !== 'windows')
        .sort(),
    ).toEqual([...keys].sort());
    expect(defaults().notifications).toEqual([]);
    expect(defaults().windows).toEqual([]);
  });

  it('has exactly the settings of docs/settings.md, with the same flag, variable, key, default and meaning', () => {
    const fromTable = SETTING_NAMES.map((name) => {
      const source = settingSource(name);
      const value = defaults()[source.key];
      return [
        `--${source.flag}`,
        source.env,
        source.key,
        value === null || value === undefined ? '(none)' : typeof value === 'string' ? value : JSON.stringify(value),
        source.description,
      ];
    });
    const rows = readmeRows();
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.sort()).toEqual(fromTable.sort());
  });

  it('gives every setting a flag for --help: a switch for booleans, a placeholder for the others', () => {
    const options = settingOptions(...SETTING_NAMES);
    expect(Object.keys(options)).toEqual(['config', ...SETTING_NAMES.map((name) => settingSource(name).flag)]);
    expect(options['allow-literal-secrets']).toEqual({
      type: 'boolean',
      placeholder: undefined,
      description: 'accept literal secret values in manifests (local use only) (env CONVERGE_ALLOW_LITERAL_SECRETS)',
    });
    expect(options['concurrency']).toEqual({
      type: 'string',
      placeholder: 'N',
      description: 'jobs in flight per worker process (at least 1) (env CONVERGE_CONCURRENCY)',
    });
  });
});

describe('resolveSettings', () => {
  it('reads every default from config/default.yaml', async () => {
    expect(await resolve()).toStrictEqual({
      configFile: DEFAULT_CONFIG_PATH,
      explicit: new Set(),
      apiUrl: undefined,
      namePrefix: undefined,
      apiKey: undefined,
      tenantId: undefined,
      redisUrl: 'redis://127.0.0.1:6379',
      redisPrefix: '{converge}',
      resync: 300_000,
      debounce: 300,
      concurrency: 10,
      httpPort: 8080,
      httpHost: '0.0.0.0',
      logLevel: 'info',
      allowLocalDiscovery: false,
      allowLiteralSecrets: false,
      allowPartial: false,
      autoApprove: false,
      emulatorState: undefined,
      driftPolicy: 'heal',
      requestTimeout: 30_000,
      attempts: 8,
      backoff: 1_000,
      maxBackoff: 300_000,
      globalRate: 0,
      waitTimeout: 1_800_000,
      progressDeadline: 1_800_000,
      healthPoll: 5_000,
      shutdownTimeout: 25_000,
      adopt: 'auto',
      prune: false,
      pruneGrace: 60_000,
      pruneMode: 'auto',
      maxDeletes: 5,
      pruneTracingProjects: false,
      jobLock: 30_000,
      flapWindow: 1_800_000,
      flapLimit: 3,
      lease: 15_000,
      redisCluster: false,
      replicaId: undefined,
      waveMaxInFlight: undefined,
      vars: [],
      overlays: [],
      notifications: [],
      windows: [],
    });
  });

  it('takes a flag over an environment variable over the config file; an empty value counts as not set', async () => {
    const dir = scratchDir();
    const file = join(dir, 'converge.yaml');
    writeFileSync(file, 'concurrency: 4\nattempts: 3\nglobal_rate: 7\ndrift: report\nallow_literal_secrets: true\n');
    const env = {
      CONVERGE_CONFIG: file,
      CONVERGE_CONCURRENCY: '5',
      CONVERGE_ATTEMPTS: '6',
      CONVERGE_GLOBAL_RATE: '',
      CONVERGE_API_KEY: 'k-1',
    };
    const settings = await resolve({ concurrency: '2', 'allow-local-discovery': true, 'tenant-id': '' }, env);
    expect(settings).toMatchObject({
      configFile: file,
      concurrency: 2,
      attempts: 6,
      globalRate: 7,
      driftPolicy: 'report',
      allowLiteralSecrets: true,
      allowLocalDiscovery: true,
      apiKey: 'k-1',
      tenantId: undefined,
    });
    // a setting the file leaves out keeps its shipped default
    expect(settings.resync).toBe(300_000);
  });

  it('reads switches, levels and durations as written in a variable', async () => {
    const settings = await resolve(
      {},
      {
        CONVERGE_ALLOW_LOCAL_DISCOVERY: 'yes',
        CONVERGE_ALLOW_LITERAL_SECRETS: 'off',
        CONVERGE_LOG_LEVEL: 'debug',
        CONVERGE_RESYNC: '1.5m',
      },
    );
    expect(settings).toMatchObject({
      allowLocalDiscovery: true,
      allowLiteralSecrets: false,
      logLevel: 'debug',
      resync: 90_000,
    });
  });

  it('names where a value that cannot be read came from', async () => {
    await expect(resolve({ concurrency: 'x' })).rejects.toThrow('--concurrency: "x" is not a whole number');
    await expect(resolve({}, { CONVERGE_DRIFT: 'bogus' })).rejects.toThrow(
      'CONVERGE_DRIFT: "bogus" is not one of heal, report',
    );
    await expect(resolve({}, { CONVERGE_ALLOW_LOCAL_DISCOVERY: 'maybe' })).rejects.toThrow(
      'CONVERGE_ALLOW_LOCAL_DISCOVERY: "maybe" is not a boolean; use true or false',
    );
    await expect(resolve({ 'request-timeout': 'soon' })).rejects.toThrow('--request-timeout: "soon" is not a duration');
    const dir = scratchDir();
    const file = join(dir, 'converge.yaml');
    writeFileSync(file, 'http_port: -1\n');
    await expect(resolve({ config: file })).rejects.toThrow(
      `${file}: http_port: "-1" is not a port; give 1 to 65535 (0: any free port)`,
    );
  });

  it('checks each number with one line: ports, counts of at least 1, durations of at least 1s (resync) or 10ms (debounce)', async () => {
    await expect(resolve({ 'http-port': '99999' })).rejects.toThrow(
      '--http-port: "99999" is not a port; give 1 to 65535 (0: any free port)',
    );
    expect((await resolve({ 'http-port': '65535' })).httpPort).toBe(65_535);
    await expect(resolve({ concurrency: '0' })).rejects.toThrow('--concurrency: 0 is too small; give at least 1');
    await expect(resolve({}, { CONVERGE_ATTEMPTS: '0' })).rejects.toThrow(
      'CONVERGE_ATTEMPTS: 0 is too small; give at least 1',
    );
    await expect(resolve({ resync: '0s' })).rejects.toThrow('--resync: "0s" is too short; give at least 1s');
    await expect(resolve({ resync: '999ms' })).rejects.toThrow('--resync: "999ms" is too short; give at least 1s');
    expect((await resolve({ resync: '1s' })).resync).toBe(1_000);
    await expect(resolve({ debounce: '0ms' })).rejects.toThrow('--debounce: "0ms" is too short; give at least 10ms');
    expect((await resolve({ 'global-rate': '0' })).globalRate).toBe(0);
  });

  it('tells settings the user gave (flag, variable, own config file) from the shipped defaults', async () => {
    const dir = scratchDir();
    const file = join(dir, 'converge.yaml');
    writeFileSync(file, 'redis_prefix: "{team}"\n');
    const settings = await resolve({ 'api-url': 'embedded', config: file }, { REDIS_URL: 'redis://r:6379' });
    expect([...settings.explicit].sort()).toEqual(['apiUrl', 'redisPrefix', 'redisUrl']);
    expect((await resolve()).explicit.has('redisUrl')).toBe(false);
  });

  it('refuses a required setting without a value, and an unknown key in the config file', async () => {
    const dir = scratchDir();
    const empty = join(dir, 'empty.yaml');
    writeFileSync(empty, 'http_host: null\n');
    await expect(resolve({ config: empty })).rejects.toThrow('setting http_host has no value; set --http-host');
    const typo = join(dir, 'typo.yaml');
    writeFileSync(typo, 'concurency: 4\n');
    await expect(resolve({ config: typo })).rejects.toThrow(`config file ${typo}: unknown setting "concurency"`);
    await expect(resolve({ config: join(dir, 'absent.yaml') })).rejects.toThrow('cannot be read (ENOENT)');
  });

  it('reports a value that cannot be read before a setting without one', async () => {
    const dir = scratchDir();
    const file = join(dir, 'converge.yaml');
    writeFileSync(file, 'http_host: null\n');
    await expect(resolve({ config: file, attempts: 'many' })).rejects.toThrow(
      '--attempts: "many" is not a whole number',
    );
  });
});

describe('list settings (vars, overlays)', () => {
  it('takes a repeated flag in order, else the comma-separated environment variable, else none', async () => {
    expect(
      (await resolve({ vars: ['a.yaml', 'b.yaml'] } as unknown as Record<string, string>, { CONVERGE_VARS: 'c.yaml' }))
        .vars,
    ).toEqual(['a.yaml', 'b.yaml']);
    expect((await resolve({}, { CONVERGE_OVERLAYS: 'envs/base, envs/prod' })).overlays).toEqual([
      'envs/base',
      'envs/prod',
    ]);
    expect((await resolve()).vars).toEqual([]);
    expect(settingOptions('vars').vars).toMatchObject({ type: 'string', multiple: true, placeholder: 'FILE' });
  });
});

describe('wave_max_in_flight', () => {
  it('a count or a percentage of the wave; anything else is one line naming where it came from', async () => {
    expect((await resolve({ 'wave-max-in-flight': '2' })).waveMaxInFlight).toEqual({ count: 2 });
    expect((await resolve({ 'wave-max-in-flight': '25%' })).waveMaxInFlight).toEqual({ percent: 25 });
    await expect(resolve({ 'wave-max-in-flight': '0' })).rejects.toThrow(
      /--wave-max-in-flight: "0" is not a count or a percentage of the wave; give e\.g\. 2 or 25%/,
    );
    await expect(resolve({ 'wave-max-in-flight': '150%' })).rejects.toThrow(/not a count or a percentage/);
  });
});
