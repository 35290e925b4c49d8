// `converge emulator`: serves the local emulator of the service until SIGTERM or SIGINT.
import { DEFAULT_BUILD_MS } from '../../emulator/defaults.js';
import type { Command } from '../command.js';
import { settingOptions } from '../settings.js';
import { COMMAND_SUMMARIES } from './summaries.js';
import { EMULATOR_ECHO_MODES, EMULATOR_SECRETS_MODES, EMULATOR_SECRETS_PATCH_MODES } from './values.js';

export const emulatorCommand: Command = {
  name: 'emulator',
  summary: COMMAND_SUMMARIES.emulator,
  usage: 'converge emulator [--port N] [--host ADDR] [--state FILE] [--seed FILE] [fault and behaviour options]',
  positionals: [0, 0],
  options: {
    port: {
      type: 'string',
      placeholder: 'N',
      description: 'port to listen on (default 0: a free port, printed on start)',
    },
    host: { type: 'string', placeholder: 'ADDR', description: 'address to bind (default 127.0.0.1)' },
    state: {
      type: 'string',
      placeholder: 'FILE',
      description: 'seed from FILE (YAML, or JSON for .json) and persist every change to it atomically',
    },
    seed: {
      type: 'string',
      placeholder: 'FILE',
      description: 'seed from FILE when --state is absent or does not exist yet; never written',
    },
    'latency-ms': { type: 'string', placeholder: 'N', description: 'added delay per request, in milliseconds' },
    'jitter-ms': { type: 'string', placeholder: 'N', description: 'up to this many more milliseconds of random delay' },
    'fail-rate': { type: 'string', placeholder: 'R', description: 'share of requests answered 503 (0..1)' },
    'rate-limit-rate': {
      type: 'string',
      placeholder: 'R',
      description: 'share of requests answered 429 with Retry-After (0..1)',
    },
    'reset-rate': {
      type: 'string',
      placeholder: 'R',
      description: 'share of connections dropped before the request is handled (0..1)',
    },
    'lost-response-rate': {
      type: 'string',
      placeholder: 'R',
      description: 'share of requests handled whose answer is then lost (0..1)',
    },
    'retry-after': { type: 'string', placeholder: 'N', description: 'Retry-After seconds of the 429s (default 1)' },
    'fail-deletes-ms': {
      type: 'string',
      placeholder: 'N',
      description:
        'answer every DELETE 503 for the first N milliseconds (an outage of deletes only; nothing is deleted)',
    },
    'page-cap': {
      type: 'string',
      placeholder: 'N',
      description: 'serve at most N deployments per page whatever the limit',
    },
    secrets: {
      type: 'string',
      placeholder: 'MODE',
      choices: EMULATOR_SECRETS_MODES,
      description: 'echo secret values plain, masked (default) or omitted',
    },
    'api-key': {
      type: 'string',
      placeholder: 'KEY',
      description: 'require this X-Api-Key (env CONVERGE_EMULATOR_API_KEY)',
    },
    'build-ms': {
      type: 'string',
      placeholder: 'N',
      description: `milliseconds a new revision takes (QUEUED, BUILDING, DEPLOYING, then DEPLOYED and active) and a deleted deployment stays AWAITING_DELETE (default ${DEFAULT_BUILD_MS})`,
    },
    'build-fail': {
      type: 'string',
      placeholder: 'REGEX',
      description:
        'new revisions of deployments whose name matches end in BUILD_FAILED; the active revision stays on the last good one',
    },
    'deploy-fail': {
      type: 'string',
      placeholder: 'REGEX',
      description: 'new revisions of deployments whose name matches end in DEPLOY_FAILED',
    },
    'secrets-patch': {
      type: 'string',
      placeholder: 'MODE',
      choices: EMULATOR_SECRETS_PATCH_MODES,
      description:
        'a non-empty secrets list in a PATCH is merged by name into the stored set (merge, default) or replaces it (replace)',
    },
    echo: {
      type: 'string',
      placeholder: 'MODE',
      choices: EMULATOR_ECHO_MODES,
      description:
        'exact (default): fields come back as sent; real: as the real service answers (listener_config, install_command, build_command null; its own custom_url for codehost; display_name and is_preview added)',
    },
    'spec-only': {
      type: 'boolean',
      description:
        "serve only the spec's endpoints: GET and DELETE of one deployment, revisions and provider list/get/PATCH/DELETE answer 404 or 405",
    },
    'omit-tenant-id': { type: 'boolean', description: 'leave tenant_id out of responses, as older services do' },
    'lenient-create': {
      type: 'boolean',
      description:
        'accept incomplete create bodies (source_config, source_revision_config, secrets left out; graph_config_path neither required nor refused)',
    },
    'any-tarball-path': {
      type: 'boolean',
      description:
        'take any source_tarball_path in a create or PATCH, as older emulators did (default: only an object_path it handed out by POST /v2/deployments/{id}/upload-url, as the real service)',
    },
    'max-body': {
      type: 'string',
      placeholder: 'BYTES',
      description: 'request bodies larger than this answer 413 Request body too large (default 1048576)',
    },
    'org-scoped-key': {
      type: 'boolean',
      description:
        'the API key spans several workspaces: a request without X-Tenant-Id answers 403 asking for a workspace',
    },
    'build-log-secrets': {
      type: 'boolean',
      description:
        "build logs print the deployment's environment (NAME=value), as a build that dumps it does (to test masking)",
    },
    ...settingOptions('allowLocalDiscovery'),
    'log-requests': {
      type: 'boolean',
      description: 'print one JSON line per request on stdout (secret values redacted)',
    },
  },
  run: async (args, io) => (await import('./emulator-run.js')).runEmulatorCommand(args, io),
};
