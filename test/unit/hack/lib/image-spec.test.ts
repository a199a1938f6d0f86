// The Dockerfile (for users with Docker) and `make image` (hack/lib/image.ts, no daemon) describe one
// image: hack/lib/image-spec.ts. This keeps them in step, and the chart's default image on it.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as yaml from 'js-yaml';
import { IMAGE, imageRef } from '../../../../hack/lib/image-spec.ts';

const root = fileURLToPath(new URL('../../../..', import.meta.url));
const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
// The image's own stage: everything after the last FROM.
const final = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
const all = (instruction: string): string[] => [...final.matchAll(new RegExp(`^${instruction} (.+)$`, 'gm'))].map((m) => m[1]!);

describe('the Dockerfile describes the image make image builds', () => {
  it('entry point and Node flags', () => expect(JSON.parse(all('ENTRYPOINT')[0] ?? '[]')).toEqual(IMAGE.entrypoint));
  it('user and group (non-root)', () => {
    expect(all('USER')).toEqual([IMAGE.user]);
    expect(IMAGE.user).not.toMatch(/^0[:]|^root/);
  });
  it('working directory', () => expect(all('WORKDIR')).toEqual([IMAGE.workdir]));
  it('environment', () => expect(all('ENV').map((e) => e.replace(' ', '='))).toEqual(IMAGE.env));
  it('the files shipped, and nothing else', () => {
    const copied = all('COPY').map((c) => c.split(/\s+/).at(-1)!.replace(/^\.\//, ''));
    expect(copied.sort()).toEqual([...IMAGE.files].sort());
  });
  it('compiled without source maps, production dependencies only', () => {
    expect(dockerfile).toMatch(/tsc -p tsconfig\.build\.json --sourceMap false/);
    expect(dockerfile).toMatch(/npm prune --omit=dev/);
    expect(dockerfile).toMatch(/node hack\/prune-modules\.ts node_modules/);
  });
});

it('the Docker build context holds the prune script the Dockerfile runs', () => {
  const ignore = readFileSync(path.join(root, '.dockerignore'), 'utf8');
  expect(ignore).toMatch(/^!hack\/prune-modules\.ts$/m);
});

describe("the chart's default image", () => {
  it(`is the one make image builds (${imageRef})`, () => {
    const values = yaml.load(readFileSync(path.join(root, 'charts', 'provider-rook', 'values.yaml'), 'utf8')) as {
      image: { repository: string; tag: string };
    };
    const chart = yaml.load(readFileSync(path.join(root, 'charts', 'provider-rook', 'Chart.yaml'), 'utf8')) as { appVersion: string };
    expect(`${values.image.repository}:${values.image.tag || chart.appVersion}`).toBe(imageRef);
  });
});
