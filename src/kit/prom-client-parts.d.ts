// prom-client's parts, as kit/metrics.ts imports them one by one (the package declares only its index).
declare module 'prom-client/lib/registry.js' {
  import { Registry } from 'prom-client';
  export = Registry;
}
declare module 'prom-client/lib/counter.js' {
  import { Counter } from 'prom-client';
  export = Counter;
}
declare module 'prom-client/lib/gauge.js' {
  import { Gauge } from 'prom-client';
  export = Gauge;
}
declare module 'prom-client/lib/histogram.js' {
  import { Histogram } from 'prom-client';
  export = Histogram;
}
/** One of the default metrics: registers its metrics in `registry`. */
declare module 'prom-client/lib/metrics/*' {
  import type { DefaultMetricsCollectorConfiguration, Registry } from 'prom-client';
  const collect: (registry: Registry, config: DefaultMetricsCollectorConfiguration<'text/plain; version=0.0.4; charset=utf-8'>) => void;
  export = collect;
}
