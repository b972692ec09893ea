/**
 * The two refusals between the kinds of model: a pooling request that reaches a generation
 * model, and a generation request that reaches a pooling model. Both are INVALID_ARGUMENT
 * naming the model (a 400 in every gateway family), never a 5xx.
 */
import { EngineError } from '../errors.js';

export function notAPoolingModel(modelName: string): EngineError {
  return new EngineError(
    'INVALID_ARGUMENT',
    `model: '${modelName}' is a text-generation model; it serves no embeddings, scores or classification (serve an embedding or reranking model for those)`,
    'model',
    'is a text-generation model',
  );
}

export function notAGenerationModel(modelName: string, tasks: readonly string[]): EngineError {
  return new EngineError(
    'INVALID_ARGUMENT',
    `model: '${modelName}' is a pooling model (${tasks.join(', ')}); it does not generate text`,
    'model',
    'is a pooling model',
  );
}
