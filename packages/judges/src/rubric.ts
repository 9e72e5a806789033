// Rubrics: named dimensions with scales, and the composite the judge must give. The default is
// the seed's five dimensions (0-10 each) plus a composite in [0, 1]. Every rubric carries a
// content hash so caches and calibrations notice when it changes.
import { z } from 'zod';
import { contentHash } from './hash.js';

const rubricDimensionSchema = z.object({
  name: z.string().regex(/^[a-z][a-z0-9_]*$/, 'dimension names are snake_case'),
  description: z.string(),
  min: z.number().default(0),
  max: z.number().default(10),
});
export type RubricDimension = z.output<typeof rubricDimensionSchema>;

export const rubricOptionsSchema = z.object({
  id: z.string().default('default'),
  /** Instructions placed before the dimensions. */
  instructions: z.string().optional(),
  dimensions: z.array(rubricDimensionSchema).min(1),
  /** What the composite score means. */
  composite: z.string().default('Final composite score from 0.0 (failure) to 1.0 (perfect).'),
});
export type RubricOptions = z.input<typeof rubricOptionsSchema>;

export interface Rubric {
  readonly id: string;
  readonly instructions: string;
  readonly dimensions: readonly RubricDimension[];
  readonly composite: string;
  /** Content hash of everything above. */
  readonly hash: string;
}

const DEFAULT_INSTRUCTIONS =
  "You are an expert AI agent task evaluator. Assess the following agent's performance.";

export function createRubric(options: RubricOptions): Rubric {
  const parsed = rubricOptionsSchema.parse(options);
  const names = new Set<string>();
  for (const dimension of parsed.dimensions) {
    if (names.has(dimension.name))
      throw new Error(`Rubric "${parsed.id}" has the dimension "${dimension.name}" twice`);
    if (!(dimension.max > dimension.min)) {
      throw new Error(
        `Rubric "${parsed.id}" dimension "${dimension.name}": max (${dimension.max}) must exceed min (${dimension.min})`,
      );
    }
    names.add(dimension.name);
  }
  const body = {
    id: parsed.id,
    instructions: parsed.instructions ?? DEFAULT_INSTRUCTIONS,
    dimensions: parsed.dimensions,
    composite: parsed.composite,
  };
  return Object.freeze({ ...body, hash: contentHash(body) });
}

export const DEFAULT_RUBRIC: Rubric = createRubric({
  id: 'shears-default',
  dimensions: [
    { name: 'task_completion', description: "Does the final response fully address the user's need?" },
    { name: 'reasoning_quality', description: 'Is the reasoning process logical and efficient?' },
    { name: 'tool_usage', description: 'Are tool selections and parameters appropriate?' },
    { name: 'error_handling', description: 'Are errors handled correctly when encountered?' },
    { name: 'efficiency', description: 'Are unnecessary steps avoided?' },
  ],
});

/** A yes/no rubric: one pass dimension (0 or 1) and a composite of 0 or 1, for majority votes. */
export const BINARY_RUBRIC: Rubric = createRubric({
  id: 'shears-binary',
  instructions: 'You are a strict grader. Decide whether the agent solved the task.',
  dimensions: [{ name: 'solved', description: '1 if the task was solved correctly, else 0', min: 0, max: 1 }],
  composite: '1.0 if the task was solved correctly, else 0.0.',
});
