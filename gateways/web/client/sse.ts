/** Reads an SSE reply (OpenAI streaming) and hands each `data:` payload on, parsed as JSON; stops at `[DONE]`. */
import { createParser } from 'eventsource-parser';

export async function readSse(res: Response, onData: (data: unknown) => void): Promise<void> {
  if (!res.body) throw new Error('the reply has no body to stream');
  let done = false;
  const parser = createParser({
    onEvent: (event) => {
      if (done) return;
      if (event.data === '[DONE]') {
        done = true;
        return;
      }
      onData(JSON.parse(event.data));
    },
  });
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done: end } = await reader.read();
    if (end) break;
    parser.feed(value);
  }
}
