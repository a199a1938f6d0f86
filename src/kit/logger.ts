// A small logger (crossplane-runtime's shape, plus warn) so the runtime does not depend on pino's API.
// Levels are written by name ("level":"warn"), as logr and klog users read them; warn is for what an
// operator may need to act on (a failing reconcile, a lease it cannot renew, a silent watch), so
// --log-level warn keeps those and drops the routine; error is for why the process is about to exit.
import { pino } from 'pino';

export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  debug(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  with(fields: Record<string, unknown>): Logger;
}

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;

/** A logger at this level writing JSON lines to stdout, or to `destination`. */
export function pinoLogger(level = process.env.LOG_LEVEL ?? 'info', destination?: pino.DestinationStream): Logger {
  const options = {
    level,
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
  };
  return wrap(destination ? pino(options, destination) : pino(options));
}

function wrap(p: pino.Logger): Logger {
  return {
    info: (msg, fields) => p.info(fields ?? {}, msg),
    debug: (msg, fields) => p.debug(fields ?? {}, msg),
    warn: (msg, fields) => p.warn(fields ?? {}, msg),
    error: (msg, fields) => p.error(fields ?? {}, msg),
    with: (fields) => wrap(p.child(fields)),
  };
}

export const silentLogger: Logger = { info: () => {}, debug: () => {}, warn: () => {}, error: () => {}, with: () => silentLogger };
