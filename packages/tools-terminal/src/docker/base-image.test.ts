import { describe, expect, it } from 'vitest';
import { SANDBOX_BASE_IMAGE, sandboxBaseHash } from './base-image.js';
import { dockerSandboxSettingsSchema } from './docker-sandbox-provider.js';

describe('the docker sandbox default image', () => {
  it('is what the provider uses when no image is set', () => {
    expect(dockerSandboxSettingsSchema.parse({}).image).toBe(SANDBOX_BASE_IMAGE);
  });

  it('keeps its recipe hash: images built from this recipe (by any shears version) are reused', () => {
    // A change to the recipe must change this figure on purpose: every user's image is rebuilt.
    expect(sandboxBaseHash()).toBe('0455488ac53f37ba');
  });
});
