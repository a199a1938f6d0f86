// Prints the ten test files that took longest in a jest JSON report (make test writes one), so where
// the suite's time goes is seen at every run. Usage: node hack/slowest-tests.ts REPORT.json
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

const report = process.argv[2] ?? '.local/jest-results.json';
if (!existsSync(report)) process.exit(0);
const { testResults } = JSON.parse(readFileSync(report, 'utf8')) as { testResults: { name: string; startTime: number; endTime: number }[] };
const files = testResults.map((t) => ({ file: path.relative(process.cwd(), t.name), s: (t.endTime - t.startTime) / 1000 }));
const total = files.reduce((a, f) => a + f.s, 0);
console.log(`the ten slowest test files (of ${files.length}, ${total.toFixed(0)} s in all):`);
for (const f of files.sort((a, b) => b.s - a.s).slice(0, 10)) console.log(`  ${f.s.toFixed(1).padStart(6)} s  ${f.file}`);
