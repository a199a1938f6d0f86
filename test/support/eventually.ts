// The one "poll until" of tests and e2e specs (hack/ scripts share it: it lives in hack/lib).
export { eventually, type EventuallyOptions } from '../../hack/lib/eventually.ts';
