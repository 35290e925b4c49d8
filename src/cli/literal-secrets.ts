// Literal secret values are for local use: the long-running commands refuse the setting that allows them.
import { UsageError } from '../core/errors.js';

/**
 * `converge run` and `converge worker` refuse --allow-literal-secrets (however it is set: flag, environment or
 * config file): a literal lives only in the manifest of the machine that planned it, so a daemon or a worker
 * elsewhere could only read it back from manifest files. One line, exit 1.
 */
export function refuseLiteralSecrets(command: 'run' | 'worker', settings: { allowLiteralSecrets: boolean }): void {
  if (!settings.allowLiteralSecrets) return;
  throw new UsageError(
    `--allow-literal-secrets (CONVERGE_ALLOW_LITERAL_SECRETS, allow_literal_secrets) is for local use: literal secrets work with validate, plan and apply on a laptop; converge ${command} refuses it, so production manifests take secrets from valueFrom: { env: NAME } or { file: PATH }`,
  );
}
