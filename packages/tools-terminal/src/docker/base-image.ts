// The docker sandbox's default image, `shears-base:bookworm`: what it is built from (a
// `debootstrap --variant=minbase` root filesystem of Debian bookworm with python3, git and CA
// certificates, imported without a registry) and the label that tells an image built from this
// recipe from one built from an older recipe. `shears prepare --sandbox docker` builds it and
// `shears doctor` checks it, both from here.
import { createHash } from 'node:crypto';

export const SANDBOX_BASE_IMAGE = 'shears-base:bookworm';

export const SANDBOX_BASE_RECIPE = {
  suite: 'bookworm',
  variant: 'minbase',
  include: ['python3', 'git', 'ca-certificates'],
  mirror: 'http://deb.debian.org/debian',
} as const;

/** The image label holding the hash of the recipe an image was built from. */
export const IMAGE_HASH_LABEL = 'shears.image.hash';

/** The hash of SANDBOX_BASE_RECIPE, as the label of an image built from it carries. */
export function sandboxBaseHash(): string {
  return createHash('sha256').update(JSON.stringify(SANDBOX_BASE_RECIPE)).digest('hex').slice(0, 16);
}
