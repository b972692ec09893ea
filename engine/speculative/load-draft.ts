/**
 * Loads `--draft-model PATH` for the draft-model proposer: its weights, its tokenizer (which
 * must be the served model's vocabulary token for token: a draft token id is verified as the
 * served model's id), and its own native context, whose KV pool holds as many blocks as the
 * served model's plus headroom for the drafted positions.
 */
import {
  createContext,
  deviceCapabilities,
  disposeContext,
  disposeModel,
  loadModel,
  modelInfo,
  type ModelHandle,
  type ModelInfo,
} from '../../native/native.js';
import { EngineError } from '../errors.js';
import { loadTokenizer } from '../tokenizer/index.js';
import { DraftModelProposer } from './draft-model.js';

export interface DraftTarget {
  readonly model: ModelInfo;
  readonly tokenizer: { readonly vocabSize: number; tokenText(id: number): string };
  readonly device: string;
  readonly blockSize: number;
  /** Blocks in the served model's pool. */
  readonly poolBlocks: number;
  readonly maxSeqs: number;
  readonly maxBatchTokens: number;
  readonly threads: number;
}

export async function loadDraftModel(
  path: string,
  field: string,
  t: DraftTarget,
): Promise<DraftModelProposer> {
  const bad = (rule: string) => new EngineError('INVALID_ARGUMENT', `${field}: ${rule}`, field);
  if (!deviceCapabilities(t.device).verify)
    throw bad(`a draft model is not supported on device ${t.device} yet`);
  let model: ModelHandle;
  try {
    model = await loadModel(path);
  } catch (e) {
    throw bad(`cannot load the draft model ${path}: ${e instanceof Error ? e.message : String(e)}`);
  }
  try {
    const m = modelInfo(model);
    const tokenizer = await loadTokenizer(path);
    const vocab = (what: string, draft: number | string, served: number | string) =>
      bad(
        `the draft model's vocabulary differs from the served model's (${what}: draft ${JSON.stringify(draft)}, served ${JSON.stringify(served)}); a draft model must share the vocabulary`,
      );
    if (m.vocabSize !== t.model.vocabSize) throw vocab('vocab_size', m.vocabSize, t.model.vocabSize);
    if (tokenizer.vocabSize !== t.tokenizer.vocabSize)
      throw vocab('tokenizer size', tokenizer.vocabSize, t.tokenizer.vocabSize);
    for (let id = 0; id < t.tokenizer.vocabSize; id++) {
      const a = tokenizer.tokenText(id);
      const b = t.tokenizer.tokenText(id);
      if (a !== b) throw vocab(`token ${id}`, a, b);
    }
    const ppb = m.kvLayout.pagesPerBlock;
    const pages = (t.poolBlocks + Math.min(t.maxSeqs, 64)) * ppb;
    const ctx = createContext(model, {
      kvBlocks: pages,
      blockSize: t.blockSize,
      maxBatchTokens: t.maxBatchTokens,
      maxSeqs: t.maxSeqs,
      threads: t.threads,
    });
    return new DraftModelProposer(
      ctx,
      {
        blockSize: t.blockSize,
        pagesPerBlock: ppb,
        pages,
        maxSeqs: t.maxSeqs,
        maxBatchTokens: t.maxBatchTokens,
        // Decode is bound by reading the weights: a draft step costs its share of them.
        draftStepCost: Math.min(1, m.weightBytes / t.model.weightBytes),
      },
      () => {
        disposeContext(ctx);
        disposeModel(model);
      },
    );
  } catch (e) {
    disposeModel(model);
    throw e;
  }
}
