/** Error bodies of the API families, read without the DOM (Node tests this). */

/** `{error:{message}}` (OpenAI), `{error:"…"}` (TGI, native), `{message}`; else undefined. */
export function messageOf(body: unknown): string | undefined {
  if (body === null || typeof body !== 'object') return undefined;
  const b = body as { error?: unknown; message?: unknown };
  if (typeof b.error === 'string') return b.error;
  if (b.error && typeof b.error === 'object') {
    const m = (b.error as { message?: unknown }).message;
    if (typeof m === 'string') return m;
  }
  if (typeof b.message === 'string') return b.message;
  return undefined;
}
