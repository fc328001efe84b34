// `npm run serve`: the service in embedded mode.
import { setFlagsFromString } from 'node:v8';
import { loadConfig } from '../../core/config.ts';
import { createLogger } from '../../core/logger.ts';
import { startEmbedded } from './start-embedded.ts';

const config = loadConfig();
// PGlite's WebAssembly compiled once by the optimizing compiler only: V8 would otherwise keep a
// baseline copy of its code too (about 40 MB more resident memory), for a start about 1 s slower.
if (config.databaseUrl.startsWith('pglite:')) setFlagsFromString('--no-liftoff');
const logger = createLogger(config.logLevel);
const service = await startEmbedded(config, logger);
if (service.initialKey) {
  process.stderr.write(
    `\nYour API key (also saved in ${config.dataDir}/initial-api-key):\n\n  ${service.initialKey}\n\n` +
      `Try: curl -H "X-API-KEY: ${service.initialKey}" ${service.url}/v1/commands\n\n`,
  );
}
process.stderr.write(`ffmpeg-operator listening on ${service.url} (docs: ${service.url}/docs)\n`);

let closing = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'shutting down');
    service.close().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  });
}
