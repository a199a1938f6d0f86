// The probe and metrics server: /metrics (Prometheus), /healthz and /readyz (see health.ts).
import { http } from './builtins.ts';
import type { Health } from './health.ts';
import type { Logger } from './logger.ts';
import { registry } from './metrics.ts';

export interface ProbeServer {
  close(): Promise<void>;
}

/** Listens at "host:port" (":8080" for every address; port 0 for any free one). */
export function serveProbes(addr: string, health: Health, log: Logger): Promise<ProbeServer> {
  const [host, port] = addr.split(':');
  const server = http.createServer((req, res) => {
    if (req.url === '/metrics') {
      registry.metrics().then(
        (body) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(body),
        // A collector that throws fails this scrape, not the process (an unhandled rejection ends it).
        (err: unknown) => {
          log.warn('collecting metrics failed', { error: err instanceof Error ? err.message : String(err) });
          res.writeHead(500, { 'Content-Type': 'text/plain' }).end('collecting metrics failed\n');
        },
      );
    } else if (req.url === '/healthz' || req.url === '/readyz') {
      const { status, body } = req.url === '/healthz' ? health.healthz() : health.readyz();
      res.writeHead(status, { 'Content-Type': 'text/plain' }).end(`${body}\n`);
    } else {
      res.writeHead(404).end();
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(port), host || undefined, () => {
      const at = server.address();
      if (at && typeof at === 'object') log.info('serving /metrics, /healthz and /readyz', { addr: `${at.address}:${at.port}` });
      resolve({
        close: () =>
          new Promise((done) => {
            server.close(() => done());
            server.closeAllConnections(); // a scraper's keep-alive connection must not hold the stop
          }),
      });
    });
  });
}
