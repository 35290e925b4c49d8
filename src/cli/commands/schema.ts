// `converge schema`: print the JSON Schema of manifests (editors validate with it through yaml-language-server).
import { manifestJsonSchemaText } from '../../core/manifest/json-schema.js';
import type { Command } from '../command.js';
import { COMMAND_SUMMARIES } from './summaries.js';

export const schemaCommand: Command = {
  name: 'schema',
  summary: COMMAND_SUMMARIES.schema,
  usage: 'converge schema',
  positionals: [0, 0],
  options: {},
  async run(_args, io) {
    io.stdout.write(manifestJsonSchemaText());
    return 0;
  },
};
