// Node's flags for the provider-rook process, as the image's ENTRYPOINT sets them (a unit test keeps
// the Dockerfile in step). Everything that runs dist/main.js like the image (bench, demo) uses these.
// V8's heap sizing is the last lever we pulled, after finding where the memory went (heap snapshots,
// the weight of each import) and cutting that; each flag's cost was measured with hack/bench-provider.ts.
//
// --max-semi-space-size=1 (MiB): V8 otherwise lets the young generation grow to 64-128 MiB during a
//   burst of reconciles, while the live heap holding 500 stores is about 30 MiB. 4 MiB took peak RSS
//   at 500 from 352 to 203-232 MiB (with the undici client of the time); 2 MiB took 4 more MiB off
//   the idle process (88 -> 84 MiB); 1 MiB 1.5 more (an idle process: 68.9, 69.1 -> 67.5, 67.5 MiB).
//   The bench with the default limits, one run each, 2 -> 1 MiB: 100 stores idle / holding / peak
//   72 / 76 / 88 -> 71 / 74 / 85 MiB, Ready 3.6 -> 3.2 s, CPU 3.6 -> 3.3 s; 500 stores 72 / 85 / 96 ->
//   71 / 82 / 94 MiB, Ready 18.9 -> 15.5 s, deleted 15.2 -> 12.8 s, CPU 15.4 -> 12.7 s (times move
//   by a few seconds from run to run: no cost seen).
// --heap-growing-percent=25: after a full GC the old generation may grow by a quarter before the
//   next, not up to four times, as V8 allows on a machine with plenty of memory. It does not cap the
//   heap (no out-of-memory at any size), it only collects sooner. Peak RSS at 500: 169 -> 121-122 MiB
//   (25 or 50); at 5,000 on 10 targets 257 MiB with 50, 241 and 243 with 25 (two runs).
// Cost, measured: provider-rook's CPU for a whole run at 100 stores 3.6 -> 4.0 s (both flags), at 500
// 11.0 -> 11.8-12.0 s, at 5,000 170.9 s (50) against 171.6 and 181.2 s (25); fill and delete times
// unchanged within the runs' spread.
// --no-opt --no-maglev: V8's two optimizing compilers off; the interpreter and the
//   Sparkplug baseline compiler stay. A controller waits on the network, and their zones and code
//   cost more memory than their speed earns it here. Measured with the bench (the same machine, one
//   run each): 100 stores RSS idle / holding / peak 92 / 108 / 117 -> 79 / 94 / 99 MiB, CPU for the
//   run 3.6 -> 3.9 s; 500 with the default limits 90 / 114 / 120 -> 80 / 97 / 102 MiB, Ready 19.4 ->
//   19.6 s, deleted 19.6 -> 21.2 s, CPU 14.8 -> 17.3 s. --lite-mode (no Sparkplug either, lazy
//   feedback) took 5 MiB more off but 43% more CPU, and 500 Ready took 24.8 s: not chosen.
export const PROVIDER_NODE_FLAGS = ['--max-semi-space-size=1', '--heap-growing-percent=25', '--no-opt', '--no-maglev'];
