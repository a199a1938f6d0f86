// make image: builds provider-rook's container image without a Docker daemon (hack/lib/image.ts) and
// writes it as an OCI archive under .local/, printing its digest, build time and layer sizes.
import { buildImage, imageSizes } from './lib/image.ts';
import { imageRef } from './lib/image-spec.ts';

const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
try {
  const built = buildImage((line) => console.log(`image: ${line}`));
  const sizes = imageSizes();
  console.log(`image: ${imageRef} ${built.digest}`);
  console.log(`image: ${built.archive} (${mib(sizes.archive)}), built in ${built.seconds.toFixed(1)} s`);
  for (const [i, l] of sizes.layers.entries()) console.log(`image:   layer ${i + 1} ${l.digest.slice(0, 19)} ${mib(l.size)} compressed`);
} catch (err) {
  console.error(`make image: ${(err as Error).message.split('\n')[0]}`);
  process.exit(1);
}
