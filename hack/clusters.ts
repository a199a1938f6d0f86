// npm run clusters -- up NAME... | down [NAME...] | stop NAME... | start NAME... | status
import { down, start, status, stop, up } from '../test/kit/cluster.ts';

const usage = 'usage: npm run clusters -- up NAME... | down [NAME...] | stop NAME... | start NAME... | status';
const log = (line: string): void => console.error(line);

async function main([command, ...names]: string[]): Promise<void> {
  switch (command) {
    case 'up':
      if (names.length === 0) throw new Error(usage);
      for (const cluster of await up(names, log)) console.log(cluster.kubeconfig);
      return;
    case 'down':
      await down(names.length > 0 ? names : undefined);
      return;
    case 'stop':
      if (names.length === 0) throw new Error(usage);
      for (const name of names) await stop(name);
      return;
    case 'start':
      if (names.length === 0) throw new Error(usage);
      for (const name of names) console.log((await start(name, log)).kubeconfig);
      return;
    case 'status':
      for (const c of status()) {
        const procs = Object.entries(c.running)
          .map(([proc, pid]) => `${proc}=${pid ?? 'stopped'}`)
          .join(' ');
        console.log(`${c.name}\t${c.server}\t${procs}\t${c.kubeconfig}`);
      }
      return;
    default:
      throw new Error(usage);
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(`clusters: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
