// The probe and metrics server (src/kit/serve.ts): a metric whose collection throws fails that scrape
// with a 500, and the process goes on serving (an unhandled rejection would end it).
import { afterAll, describe, expect, it } from '@jest/globals';
import { Health } from '../../../src/kit/health.ts';
import { silentLogger, type Logger } from '../../../src/kit/logger.ts';
import { Gauge, registry } from '../../../src/kit/metrics.ts';
import { serveProbes, type ProbeServer } from '../../../src/kit/serve.ts';

const warnings: string[] = [];
const messages: string[] = [];
const log: Logger = {
  ...silentLogger,
  info: (msg, fields) => void messages.push(String(fields?.addr ?? msg)),
  warn: (msg) => void warnings.push(msg),
};
let server: ProbeServer | undefined;

afterAll(async () => {
  await server?.close();
  registry.removeSingleMetric('test_broken_collector');
});

describe('serveProbes', () => {
  it('answers a scrape whose collector throws with a 500, and serves the next request', async () => {
    const rejections: unknown[] = [];
    const onRejection = (err: unknown) => void rejections.push(err);
    process.on('unhandledRejection', onRejection);
    try {
      new Gauge({
        name: 'test_broken_collector',
        help: 'throws when collected',
        registers: [registry],
        collect() {
          throw new Error('broken collector');
        },
      });
      const messages: string[] = [];
      server = await serveProbes('127.0.0.1:0', new Health(), {
        ...log,
        info: (msg, fields) => void messages.push(String(fields?.addr ?? msg)),
      });
      const addr = messages.find((m) => /^127\.0\.0\.1:\d+$/.test(m));
      const scrape = await fetch(`http://${addr}/metrics`);
      expect(scrape.status).toBe(500);
      expect(await scrape.text()).not.toContain('broken collector');
      expect(warnings).toContain('collecting metrics failed');
      expect((await fetch(`http://${addr}/healthz`)).status).toBe(200);
      await new Promise((resolve) => setImmediate(resolve));
      expect(rejections).toEqual([]);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });
});
