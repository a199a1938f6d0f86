// A two-method logger (crossplane-runtime's shape) so the runtime does not depend on pino's API.
import { pino } from 'pino';

export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  debug(msg: string, fields?: Record<string, unknown>): void;
  with(fields: Record<string, unknown>): Logger;
}

export function pinoLogger(level = process.env.LOG_LEVEL ?? 'info', base?: pino.Logger): Logger {
  const p = base ?? pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime });
  return {
    info: (msg, fields) => p.info(fields ?? {}, msg),
    debug: (msg, fields) => p.debug(fields ?? {}, msg),
    with: (fields) => pinoLogger(level, p.child(fields)),
  };
}

export const silentLogger: Logger = { info: () => {}, debug: () => {}, with: () => silentLogger };
