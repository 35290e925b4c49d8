// The table of CLI commands, in the order --help lists them; each command's module is imported only when it is needed.
import type { Command } from '../command.js';
import { COMMAND_SUMMARIES } from './summaries.js';

const LOADERS = {
  validate: async () => (await import('./validate.js')).validateCommand,
  plan: async () => (await import('./plan.js')).planCommand,
  apply: async () => (await import('./apply.js')).applyCommand,
  comment: async () => (await import('./comment.js')).commentCommand,
  run: async () => (await import('./run.js')).runCommand,
  status: async () => (await import('./status.js')).statusCommand,
  reconcile: async () => (await import('./reconcile.js')).reconcileCommand,
  history: async () => (await import('./history.js')).historyCommand,
  logs: async () => (await import('./logs.js')).logsCommand,
  worker: async () => (await import('./worker.js')).workerCommand,
  notify: async () => (await import('./notify.js')).notifyCommand,
  emulator: async () => (await import('./emulator.js')).emulatorCommand,
  repos: async () => (await import('./repos.js')).reposCommand,
  export: async () => (await import('./export.js')).exportCommand,
  schema: async () => (await import('./schema.js')).schemaCommand,
  completion: async () => (await import('./completion.js')).completionCommand(loadCommands),
} satisfies Record<keyof typeof COMMAND_SUMMARIES, () => Promise<Command>>;

export type CommandName = keyof typeof LOADERS;

/** Every command name, in --help order. */
export const COMMAND_NAMES = Object.keys(LOADERS) as CommandName[];

function isCommandName(name: string): name is CommandName {
  return Object.hasOwn(LOADERS, name);
}

/** The named command (loading its module and what it imports), or undefined for an unknown name. */
export async function loadCommand(name: string): Promise<Command | undefined> {
  return isCommandName(name) ? LOADERS[name]() : undefined;
}

/** Every command, in --help order (loads them all: for the overall --help and tests). */
export async function loadCommands(): Promise<Command[]> {
  return Promise.all(COMMAND_NAMES.map((name) => LOADERS[name]()));
}
