// Node's flags for the provider-rook process, as the image's ENTRYPOINT sets them (a unit test keeps
// the Dockerfile in step). Everything that runs dist/main.js like the image (bench, demo) uses these.
//
// --max-semi-space-size=4 (MiB): V8 otherwise lets the young generation grow to 64-128 MiB during a
// burst of reconciles, while the live heap holding 500 stores is 37 MiB (heap snapshot). Measured
// with `make bench` at 500 stores: peak RSS 352 -> 203-232 MiB; CPU for the whole run 16.6 -> 15.5-17.1 s,
// fill and delete times unchanged.
export const PROVIDER_NODE_FLAGS = ['--max-semi-space-size=4'];
