// Settings resolution: flags beat environment variables, which beat the config file (docs/contracts.md §2).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { LineCounter, parseDocument, type Document } from 'yaml';
import { z } from 'zod';
import { UsageError } from '../core/errors.js';
import { notificationsFromConfig, type ReceiverConfig } from '../core/notify/receivers.js';
import type { ChangeWindow } from '../core/windows.js';
import type { OptionSpec, ParsedArgs } from './command.js';
import { SETTING_NAMES, SETTINGS, settingSource, type SettingName } from './setting-table.js';

/** The shipped defaults, `config/default.yaml` beside the package. */
export const DEFAULT_CONFIG_PATH = fileURLToPath(new URL('../../config/default.yaml', import.meta.url));

/** The resolved settings: one value per setting, of the type its schema reads, and the config file read. */
export interface Settings extends z.output<typeof SETTINGS> {
  /** Which config file was read. */
  configFile: string;
  /**
   * The settings given by a flag, an environment variable or a config file of the user's (--config,
   * CONVERGE_CONFIG); a value from the shipped config/default.yaml is a default, not a choice.
   */
  explicit: ReadonlySet<SettingName>;
  /** The `notifications:` list of the config file (docs/notifications.md): names of environment variables, no value. */
  notifications: ReceiverConfig[];
  /** The `windows:` list of the config file (docs/rollouts.md, "Change windows"): when automatic writes wait. */
  windows: ChangeWindow[];
}

/** CLI options for the named settings, plus --config; for a command's `options` table. */
export function settingOptions(...names: SettingName[]): Record<string, OptionSpec> {
  const options: Record<string, OptionSpec> = {
    config: {
      type: 'string',
      placeholder: 'FILE',
      description: 'config file (default: config/default.yaml; env CONVERGE_CONFIG)',
    },
  };
  for (const name of names) {
    const source = settingSource(name);
    options[source.flag] = {
      type: source.flagType === 'list' ? 'string' : source.flagType,
      ...(source.flagType === 'list' ? { multiple: true } : {}),
      placeholder: source.placeholder,
      ...(source.choices ? { choices: source.choices } : {}),
      description: `${source.description} (env ${source.env})`,
    };
  }
  return options;
}

const ConfigFile = z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(z.string())]));

/** Config-file keys that are not settings: lists read on their own (with file:line:column problems). */
const LIST_KEYS = ['notifications', 'windows'];

interface ConfigFileContents {
  values: Record<string, unknown>;
  notifications: ReceiverConfig[];
  windows: ChangeWindow[];
}

/**
 * The `windows:` list of a config file that has one, checked by src/core/windows-config.ts; that module and the cron
 * parser it reads schedules with are imported only then, so a command whose config sets no window does not load them.
 */
async function windowsOf(doc: Document, lines: LineCounter, path: string, list: unknown): Promise<ChangeWindow[]> {
  // None, or an empty list (the shipped defaults' `windows: []`): no window, and nothing to check.
  if (list === undefined || list === null || (Array.isArray(list) && list.length === 0)) return [];
  const { windowsFromConfig } = await import('../core/windows-config.js');
  return windowsFromConfig(doc, lines, path);
}

async function readConfigFile(path: string): Promise<ConfigFileContents> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(`config file ${path}: cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`, {
      cause: error,
    });
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines });
  const yamlError = doc.errors[0];
  if (yamlError) throw new UsageError(`config file ${path}: ${yamlError.message.split('\n')[0]}`);
  const data: unknown = doc.toJS() ?? {};
  const mapping = typeof data === 'object' && data !== null && !Array.isArray(data);
  if (!mapping) throw new UsageError(`config file ${path}: expected a mapping of setting names to plain values`);
  const { notifications: _list, windows, ...plain } = data as Record<string, unknown>;
  const known = SETTING_NAMES.map((name) => settingSource(name).key);
  for (const key of Object.keys(plain)) {
    if (!known.includes(key))
      throw new UsageError(
        `config file ${path}: unknown setting "${key}"; known: ${[...known, ...LIST_KEYS].join(', ')}`,
      );
  }
  const parsed = ConfigFile.safeParse(plain);
  if (!parsed.success)
    throw new UsageError(
      `config file ${path}: expected a mapping of setting names to plain values (vars and overlays: lists of paths)`,
    );
  return {
    values: parsed.data,
    notifications: notificationsFromConfig(doc, lines, path),
    windows: await windowsOf(doc, lines, path, windows),
  };
}

/** Empty values (an empty flag or variable, a null or an empty list in the config file) count as not set. */
function isSet(value: unknown): boolean {
  if (Array.isArray(value)) return value.length > 0;
  return value !== undefined && value !== null && value !== '';
}

/** Resolves every setting: flag, then environment variable, then config file. */
export async function resolveSettings(args: ParsedArgs, env: NodeJS.ProcessEnv): Promise<Settings> {
  const configFile = (args.values.config as string | undefined) ?? env.CONVERGE_CONFIG ?? DEFAULT_CONFIG_PATH;
  const file = await readConfigFile(configFile);
  const fileValues = file.values;
  const fallback =
    configFile === DEFAULT_CONFIG_PATH
      ? fileValues
      : { ...(await readConfigFile(DEFAULT_CONFIG_PATH)).values, ...fileValues };
  const raw: Record<string, { value: unknown; origin: string } | undefined> = {};
  const explicit = new Set<SettingName>();
  for (const name of SETTING_NAMES) {
    const source = settingSource(name);
    raw[name] = [
      { value: args.values[source.flag], origin: `--${source.flag}` },
      { value: env[source.env], origin: source.env },
      { value: fallback[source.key], origin: `${configFile}: ${source.key}` },
    ].find((c) => isSet(c.value));
    const fromUser =
      isSet(args.values[source.flag]) ||
      isSet(env[source.env]) ||
      (configFile !== DEFAULT_CONFIG_PATH && isSet(fileValues[source.key]));
    if (fromUser) explicit.add(name);
  }
  const parsed = SETTINGS.safeParse(raw);
  if (!parsed.success) {
    // A value that cannot be read is reported before a setting without one.
    const issue = parsed.error.issues.find((i) => i.code === 'custom') ?? parsed.error.issues[0];
    throw new UsageError(issue?.message ?? 'settings cannot be read');
  }
  return { ...parsed.data, configFile, explicit, notifications: file.notifications, windows: file.windows };
}
