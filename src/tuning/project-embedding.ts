import type { ModelEmbedding } from '../storage/vectors';
import { projectVector, type Projection } from './projection';

/** An image's embedding as its application's tuning writes it: the whole-image and every object vector projected. */
export const projectEmbedding = (projection: Projection, embedding: ModelEmbedding): ModelEmbedding => ({
  model: embedding.model,
  vector: projectVector(projection, embedding.vector),
  objects: embedding.objects.map((object) => ({ ...object, embedding: projectVector(projection, object.embedding) })),
  tuned: true,
});
