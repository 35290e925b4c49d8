// The table of CLI commands, in the order --help lists them.
import type { Command } from '../command.js';
import { schemaCommand } from './schema.js';
import { validateCommand } from './validate.js';
import { planCommand } from './plan.js';
import { applyCommand } from './apply.js';
import { emulatorCommand } from './emulator.js';
import { reposCommand } from './repos.js';
import { workerCommand } from './worker.js';
import { runCommand } from './run.js';
import { statusCommand } from './status.js';

export const COMMANDS: Command[] = [
  validateCommand,
  planCommand,
  applyCommand,
  runCommand,
  statusCommand,
  workerCommand,
  emulatorCommand,
  reposCommand,
  schemaCommand,
];
