import pino, { type Logger } from 'pino';

/** JSON logs, one line per event. Lines about a command carry command_id (see core/engine/reconciler.ts). */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, base: { service: 'ffmpeg-operator' }, timestamp: pino.stdTimeFunctions.isoTime }, destination);
}
