// A manifest watcher as a process (test/e2e/watch-mounted-file.test.ts runs it in a mount namespace of its own): the
// built watcher (argv: its build folder, the directory), one JSON line on stdout when it watches and one a burst.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [buildDir, dir] = process.argv.slice(2);
const { watchManifestDir } = await import(pathToFileURL(join(buildDir, 'daemon', 'watch', 'watcher.js')).href);
const say = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
const watcher = await watchManifestDir({
  dir,
  debounceMs: 100,
  onBurst: (burst) => say({ paths: burst.paths }),
  onError: (error) => say({ error: error.message }),
});
process.once('SIGTERM', () => void watcher.close().then(() => process.exit(0)));
say({ watching: watcher.watchedCount() });
