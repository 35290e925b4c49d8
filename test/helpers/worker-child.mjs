// A converge worker process for the queue tests: built code, settings from QUEUE_CHILD_CONFIG, logs on stderr.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const config = JSON.parse(process.env.QUEUE_CHILD_CONFIG);
const { startWorkerProcess } = await import(
  pathToFileURL(join(config.buildDir, 'jobs', 'runner', 'worker-process.js')).href
);
const line = (level) => (fields, msg) => process.stderr.write(`${JSON.stringify({ level, msg, ...fields })}\n`);
const log = { debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error') };
try {
  const worker = await startWorkerProcess(config.settings, {
    env: process.env,
    log,
    worker: { name: config.name, lockDuration: config.lockDuration, stalledInterval: config.stalledInterval },
  });
  // As `converge worker` does: a signal stops the worker, then the process exits.
  const onSignal = () => void worker.stop().then(() => process.exit(0));
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  process.stdout.write('ready\n');
} catch (error) {
  process.stderr.write(`converge worker: ${error.message}\n`);
  process.exit(1);
}
