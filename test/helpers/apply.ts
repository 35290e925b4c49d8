// Helpers of the apply suites: manifest trees on disk, the apply command run in-process with captured output, seeds.
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { applyCommand } from '../../src/cli/commands/apply.js';
import { parseCommandArgs } from '../../src/cli/command.js';
import { ConvergeError } from '../../src/core/errors.js';
import type { EmulatorSeed, RequestLogEntry } from '../../src/emulator/server.js';
import { deploymentYaml, externalDockerSpec } from './manifests.js';

export const ACME = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa';

export async function manifestDir(files: Record<string, string>): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'converge-queue-'));
  for (const [name, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, name)), { recursive: true });
    await writeFile(join(dir, name), text);
  }
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

class Capture extends Writable {
  text = '';
  isTTY = false;
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `converge apply ARGV` in-process as main.ts would (a ConvergeError becomes one line and exit 1). */
export async function runApplyCli(argv: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  const stdout = new Capture();
  const stderr = new Capture();
  let code: number;
  try {
    code = await applyCommand.run(parseCommandArgs(applyCommand, argv), { stdout, stderr, env, cwd: process.cwd() });
  } catch (error) {
    if (!(error instanceof ConvergeError)) throw error;
    stderr.write(`converge apply: ${error.message}\n`);
    code = 1;
  }
  return { code, stdout: stdout.text, stderr: stderr.text };
}

export { deploymentYaml, externalDockerSpec };

export function providerYaml(name: string, secretEnv: string): string {
  return [
    'apiVersion: converge/v1',
    'kind: OAuthProvider',
    'metadata:',
    `  name: ${name}`,
    'spec:',
    `  name: ${name.toUpperCase()}`,
    `  client_id: "id-${name}"`,
    `  client_secret: { valueFrom: { env: ${secretEnv} } }`,
    `  auth_url: https://${name}.example.com/oauth/authorize`,
    `  token_url: https://${name}.example.com/oauth/token`,
    '',
  ].join('\n');
}

export function seedWith(deployments: NonNullable<EmulatorSeed['deployments']>): EmulatorSeed {
  return {
    integrations: [
      {
        id: ACME,
        installation_id: 101,
        name: 'acme',
        repositories: [{ id: 1, name: 'support-agent', default_branch: 'main' }],
      },
    ],
    deployments,
  };
}

/**
 * Writes that landed: handled with a 2xx, whether answered or with the answer lost ('fault-lost' keeps the status the
 * handler gave, so a lost 409 is not counted as a write).
 */
export function landedWrites(log: RequestLogEntry[]): RequestLogEntry[] {
  return log.filter((e) => e.method !== 'GET' && e.status >= 200 && e.status < 300);
}

export function writes(log: RequestLogEntry[]): RequestLogEntry[] {
  return log.filter((e) => e.method !== 'GET');
}
